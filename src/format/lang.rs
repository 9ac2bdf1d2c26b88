//! Morloc's pool languages: the one table of their names and the aliases a
//! user (or a manifest) may spell them with. Everything that compares pool
//! languages (`--pool-replicas`, the default replica caps) goes through
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
}

/// The pool languages this server knows. Another language is served too;
/// it is only compared by its lower-cased name and keeps one process unless
/// `--pool-replicas` says otherwise.
pub const LANGUAGES: [Language; 4] = [
    Language {
        name: "py",
        aliases: &["python", "python3"],
        replicated: true,
    },
    Language {
        name: "r",
        aliases: &[],
        replicated: true,
    },
    Language {
        name: "cpp",
        aliases: &["c++", "cxx"],
        replicated: true,
    },
    Language {
        name: "rust",
        aliases: &["rs"],
        replicated: true,
    },
];

/// The known language `name` spells (any case, alias or canonical name).
pub fn find(name: &str) -> Option<&'static Language> {
    let lower = name.trim().to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|l| l.name == lower || l.aliases.contains(&lower.as_str()))
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
