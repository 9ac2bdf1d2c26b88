//! What the tests read about processes and a run's files: `/proc` (parents,
//! process groups, command lines, open descriptors) and the shared-memory
//! files in `/dev/shm`.

use std::fs;

/// The fields of `/proc/<pid>/stat` the tests use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `Z` (zombie), ...
    pub state: String,
    pub ppid: i32,
    pub pgrp: i32,
}

/// The stat of a process, or `None` when it is gone.
pub fn stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.to_string();
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Every pid in `/proc`.
pub fn all_pids() -> Vec<i32> {
    fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A process's argv (empty when it is gone).
pub fn cmdline(pid: i32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&child| stat(child).is_some_and(|s| s.ppid == pid))
        .collect()
}

/// True once `pid` has exited (gone, or a zombie awaiting its reaper).
pub fn exited(pid: i32) -> bool {
    stat(pid).is_none_or(|s| s.state == "Z" || s.state == "X")
}

/// Live (not zombie) processes in any of these process groups, with their
/// argv.
pub fn group_members(groups: &[i32]) -> Vec<(i32, Vec<String>)> {
    all_pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|s| groups.contains(&s.pgrp) && s.state != "Z"))
        .map(|pid| (pid, cmdline(pid)))
        .collect()
}

/// The `/dev/shm` names of the server with this pid (`morloc-<pid>-*`),
/// sorted.
pub fn shm_files(server_pid: i32) -> Vec<String> {
    let prefix = format!("morloc-{server_pid}-");
    let mut names: Vec<String> = fs::read_dir("/dev/shm")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A regular file a process has open: its offset and its size.
#[derive(Clone, Copy, Debug)]
pub struct OpenFile {
    pub pos: u64,
    pub size: u64,
}

/// The first file `pid` has open whose path contains `needle`, if any.
pub fn open_file(pid: i32, needle: &str) -> Option<OpenFile> {
    for entry in fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let Ok(target) = fs::read_link(entry.path()) else {
            continue;
        };
        if !target.to_string_lossy().contains(needle) {
            continue;
        }
        let fd = entry.file_name();
        let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.to_string_lossy()));
        let pos = info
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("pos:")?.trim().parse().ok())?;
        let size = fs::metadata(entry.path()).ok()?.len();
        return Some(OpenFile { pos, size });
    }
    None
}

/// How many descriptors a process has open.
#[track_caller]
pub fn fd_count(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or_else(|e| panic!("cannot list the descriptors of {pid}: {e}"))
}

/// A size field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...) in bytes.
#[track_caller]
pub fn status(pid: u32, field: &str) -> u64 {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: Option<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok());
    kib.unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status: {text}")) * 1024
}

/// The address a process listens on over TCP (IPv4), from its socket
/// descriptors and `/proc/net/tcp`; `None` until it listens. For a server
/// on `--http-port 0` that does not say where it listens (its banner
/// filtered out): a port picked by the test and given to the server could
/// be taken meanwhile by any other socket of the machine.
pub fn tcp_listening(pid: i32) -> Option<std::net::SocketAddr> {
    let inodes: Vec<String> = fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            let target = fs::read_link(e.path()).ok()?;
            let target = target.to_str()?;
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let table = fs::read_to_string(format!("/proc/{pid}/net/tcp")).ok()?;
    table.lines().skip(1).find_map(|line| {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
        if *state != "0A" || !inodes.iter().any(|i| i == inode) {
            return None;
        }
        let (ip, port) = local.split_once(':')?;
        let ip = u32::from_str_radix(ip, 16).ok()?;
        let port = u16::from_str_radix(port, 16).ok()?;
        // The address's bytes in network order, printed as a native word.
        let ip = std::net::Ipv4Addr::from(ip.to_ne_bytes());
        Some(std::net::SocketAddr::from((ip, port)))
    })
}
