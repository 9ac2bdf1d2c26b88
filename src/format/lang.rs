//! Morloc's pool languages: the one table of their names, the aliases a
//! user (or a manifest) may spell them with, and how their pools run
//! calls. Everything that compares pool languages (`--pool-replicas`, the
//! default replica caps, the leases) goes through [`find`] or
//! [`canonical`], so `c++`, `CPP` and `cpp` name the same pool.

/// A pool language.
#[derive(Clone, Copy, Debug)]
pub struct Language {
    /// The canonical name, as Morloc writes it in `manifest.json`.
    pub name: &'static str,
    /// Other spellings accepted for it (lower case).
    pub aliases: &'static [&'static str],
    /// Whether its pools scale up to replicas by default (see
    /// `pools::set::default_replica_cap`).
    pub replicated: bool,
    /// Whether a pool process runs one call at a time (a second connection
    /// only waits inside it), so each call takes a process to itself (see
    /// `pools::leases`).
    pub one_at_a_time: bool,
}

/// The pool languages this server knows. Another language is served too;
/// it is only compared by its lower-cased name and keeps one process unless
/// `--pool-replicas` says otherwise.
pub const LANGUAGES: [Language; 4] = [
    Language {
        name: "py",
        aliases: &["python", "python3"],
        replicated: true,
        one_at_a_time: true,
    },
    Language {
        name: "r",
        aliases: &[],
        replicated: true,
        one_at_a_time: true,
    },
    Language {
        name: "cpp",
        aliases: &["c++", "cxx"],
        replicated: true,
        one_at_a_time: false,
    },
    Language {
        name: "rust",
        aliases: &["rs"],
        replicated: true,
        one_at_a_time: false,
    },
];

/// The known language `name` spells (any case, alias or canonical name).
pub fn find(name: &str) -> Option<&'static Language> {
    let name = name.trim();
    LANGUAGES.iter().find(|l| {
        std::iter::once(&l.name)
            .chain(l.aliases)
            .any(|spelling| spelling.eq_ignore_ascii_case(name))
    })
}

/// The canonical name of `name`: a known language's own name, else `name`
/// lower-cased.
pub fn canonical(name: &str) -> String {
    match find(name) {
        Some(language) => language.name.to_string(),
        None => name.trim().to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_maps_to_its_one_name() {
        for (typed, name) in [
            ("py", "py"),
            ("Python", "py"),
            ("python3", "py"),
            ("R", "r"),
            ("cpp", "cpp"),
            ("C++", "cpp"),
            ("cxx", "cpp"),
            ("rust", "rust"),
            ("rs", "rust"),
            (" jl ", "jl"),
        ] {
            assert_eq!(canonical(typed), name, "{typed}");
        }
        // Python and R pools run one call at a time, whatever the spelling.
        let one_at_a_time = |name: &str| find(name).is_some_and(|l| l.one_at_a_time);
        for name in ["py", "Python3", " r "] {
            assert!(one_at_a_time(name), "{name}");
        }
        for name in ["cpp", "C++", "rs", "jl"] {
            assert!(!one_at_a_time(name), "{name}");
        }
        // No alias is another language's name or alias.
        let mut seen = std::collections::HashSet::new();
        for l in LANGUAGES {
            for spelling in std::iter::once(&l.name).chain(l.aliases) {
                assert!(seen.insert(*spelling), "{spelling} twice");
                assert_eq!(*spelling, spelling.to_ascii_lowercase());
            }
        }
    }
}
