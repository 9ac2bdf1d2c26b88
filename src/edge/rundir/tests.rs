//! Unit tests of the `rundir` module (kept apart from the code they test).

use std::os::unix::fs::PermissionsExt;

use super::*;

/// A private parent directory standing in for `/tmp`, removed at the end.
struct Parent(PathBuf);

impl Parent {
    fn new() -> Parent {
        Parent(proc::make_tmpdir().expect("tmpdir"))
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        let _ = proc::remove_tmpdir(&self.0);
    }
}

#[test]
fn a_run_directory_is_private_locked_and_names_its_basename() {
    let parent = Parent::new();
    let basename = shm::new_basename();
    let run = RunDir::create_in(&parent.0, &basename).expect("create");
    let name = run.path().file_name().unwrap().to_str().unwrap();
    assert!(is_run_dir_name(name), "{name}");
    let mode = fs::metadata(run.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(run.pool_tmp().is_dir());
    assert_eq!(
        fs::read_to_string(run.path().join(LOCK_NAME)).unwrap(),
        format!("{basename}\n")
    );
    // Only the lock file and the pools' tmp/ are there; nothing staged.
    let mut names: Vec<String> = fs::read_dir(run.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [LOCK_NAME, POOL_TMP_NAME]);
    assert!(is_own_basename(&basename), "{basename}");
}

#[test]
fn live_runs_are_kept_and_dead_runs_removed() {
    let parent = Parent::new();
    let live = RunDir::create_in(&parent.0, &shm::new_basename()).expect("create");
    let dead = RunDir::create_in(&parent.0, &shm::new_basename()).expect("create");
    let dead_path = dead.path().to_path_buf();
    fs::write(dead.pool_tmp().join("Rtmp-left-behind"), b"x").unwrap();
    // Dropping the handle without removing the directory is what a killed
    // server leaves: the directory with an unlocked lock file.
    drop(dead);
    assert!(dead_path.is_dir());
    assert_eq!(sweep_dead_in(&parent.0), 1);
    assert!(!dead_path.exists());
    // The live run's lock is held (by this process, through another open
    // file description, which conflicts all the same).
    assert!(live.path().is_dir());
    assert_eq!(sweep_dead_in(&parent.0), 0);
    assert!(live.path().join(LOCK_NAME).is_file());
}

#[test]
fn the_dead_runs_shared_memory_goes_with_it() {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    let parent = Parent::new();
    let basename = shm::new_basename();
    let run = RunDir::create_in(&parent.0, &basename).expect("create");
    let volume = Path::new("/dev/shm").join(format!("{basename}_7"));
    fs::write(&volume, b"volume").unwrap();
    let fallback = run.path().join(format!("{basename}_8"));
    fs::write(&fallback, b"volume").unwrap();
    drop(run);
    assert_eq!(sweep_dead_in(&parent.0), 1);
    let left = volume.exists();
    let _ = fs::remove_file(&volume);
    assert!(!left, "{} was left behind", volume.display());
}

#[test]
fn directories_that_are_not_ours_are_never_touched() {
    let parent = Parent::new();
    // No lock file: the reference server's directory, or one being set up.
    let foreign = parent.0.join("morloc.abcdef");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("pipe-py"), b"").unwrap();
    // A name mkdtemp does not make.
    let odd = parent.0.join("morloc.abc");
    fs::create_dir(&odd).unwrap();
    fs::write(odd.join(LOCK_NAME), b"").unwrap();
    // A symlink to a dead run directory.
    let target = parent.0.join("elsewhere");
    fs::create_dir(&target).unwrap();
    fs::write(target.join(LOCK_NAME), b"").unwrap();
    std::os::unix::fs::symlink(&target, parent.0.join("morloc.zzzzzz")).unwrap();
    // A lock file that is a symlink.
    let linked = parent.0.join("morloc.yyyyyy");
    fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(target.join(LOCK_NAME), linked.join(LOCK_NAME)).unwrap();
    assert_eq!(sweep_dead_in(&parent.0), 0);
    for path in [&foreign, &odd, &target, &linked] {
        assert!(path.is_dir(), "{}", path.display());
    }
    assert!(parent.0.join("morloc.zzzzzz").exists());
    // A dead run whose lock file names no basename of ours is removed, and
    // nothing is unlinked on its behalf.
    let odd_lock = parent.0.join("morloc.xxxxxx");
    fs::create_dir(&odd_lock).unwrap();
    fs::write(odd_lock.join(LOCK_NAME), b"../../etc\n").unwrap();
    assert_eq!(sweep_dead_in(&parent.0), 1);
    assert!(!odd_lock.exists());
    assert!(!is_own_basename("../../etc"));
    assert!(!is_own_basename("morloc-12-xyz"));
    assert!(sweep_dead_in(&parent.0.join("missing")) == 0);
}
