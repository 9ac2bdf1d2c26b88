//! Typed indices into a program's pools: a manifest pool ([`BasePool`]) and
//! a process serving one ([`Proc`]: the primary or a replica).

/// A manifest pool of a program: its index in the manifest's pool list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) struct BasePool(pub(in crate::edge::reactor) usize);

/// A process of a program's pools. The primary of manifest pool `i` is
/// `Proc(i)` (the manifest's pools come first); replicas follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) struct Proc(pub(in crate::edge::reactor) usize);

impl BasePool {
    /// The primary process of this pool (the one other pools call).
    pub(in crate::edge::reactor) fn primary(self) -> Proc {
        Proc(self.0)
    }
}
