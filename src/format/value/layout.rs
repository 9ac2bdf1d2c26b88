//! [`Layout`]: a schema compiled once for walking values, with back-references
//! resolved to node indices and the voidstar head layout precomputed.

use std::fmt;

use super::NodeId;
use crate::format::schema::{HandleKind, Schema};

/// A schema compiled for walking values: every node knows its voidstar head
/// width and alignment, tuples and records know their member offsets, and
/// back-references point at the node of their declaration (so the node
/// graph may be cyclic).
#[derive(Clone, Debug)]
pub struct Layout {
    nodes: Vec<Node>,
    root: NodeId,
    /// The declared names (`&name`) and their nodes, for error messages.
    decls: Vec<(NodeId, String)>,
}

/// One compiled schema node.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// Width of the voidstar head in bytes.
    pub width: usize,
    /// Alignment of the head inside a container.
    pub align: usize,
    /// True when the value has no out-of-line data (reference
    /// `is_fixed_width`: Nil, Bool, fixed numbers, tuples of those).
    pub fixed: bool,
}

#[derive(Clone, Debug)]
pub enum NodeKind {
    Nil,
    Bool,
    Int { signed: bool, bytes: u8 },
    Float { bytes: u8 },
    BigInt,
    Str,
    List { len: Option<u64>, elem: NodeId },
    Tuple(Vec<Member>),
    Record(Vec<Member>),
    Optional(NodeId),
    Handle(HandleKind),
    Table,
}

/// A tuple or record member: its key (empty for tuples), head offset and node.
#[derive(Clone, Debug)]
pub struct Member {
    pub key: String,
    pub offset: usize,
    pub node: NodeId,
}

/// A schema that cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

impl Layout {
    /// Compiles `schema`. Fails only for a recursive type that contains
    /// itself outside every list and optional (its head would be infinitely
    /// wide), or for a back-reference to an undeclared name.
    pub fn new(schema: &Schema) -> Result<Layout, LayoutError> {
        let mut layout = Layout {
            nodes: Vec::new(),
            root: 0,
            decls: Vec::new(),
        };
        let mut scope = Vec::new();
        layout.root = layout.compile(schema, &mut scope, None, 0)?;
        layout.place()?;
        Ok(layout)
    }

    pub fn root(&self) -> NodeId {
        self.root
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// Alignment of the data region of a list whose elements are `elem`:
    /// 64 for fixed-size numbers (the reference aligns them for SIMD), the
    /// element's own alignment otherwise.
    pub fn list_data_align(&self, elem: NodeId) -> usize {
        let node = &self.nodes[elem];
        match node.kind {
            NodeKind::Int { .. } | NodeKind::Float { .. } => 64.max(node.align),
            _ => node.align,
        }
    }

    /// Stores a node, into the `slot` reserved for a declaration if there is
    /// one. Tuples and records get their shape later, in [`Layout::place`].
    fn put(
        &mut self,
        slot: Option<NodeId>,
        kind: NodeKind,
        width: usize,
        align: usize,
        fixed: bool,
    ) -> NodeId {
        let node = Node {
            kind,
            width,
            align,
            fixed,
        };
        match slot {
            Some(id) => {
                self.nodes[id] = node;
                id
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// The first pass: builds the node graph. A declaration (`&name`)
    /// reserves its node before its body is compiled, so back-references
    /// inside the body can point at it; the body is then compiled into that
    /// reserved node. Widths of tuples and records are left for
    /// [`Layout::place`], because a member may refer back to a declaration
    /// whose width is not known yet (`Trie = {val: ?a, subs: [(Str, Trie)]}`).
    fn compile<'s>(
        &mut self,
        schema: &'s Schema,
        scope: &mut Vec<(&'s str, NodeId)>,
        slot: Option<NodeId>,
        depth: usize,
    ) -> Result<NodeId, LayoutError> {
        if depth > crate::format::schema::MAX_DEPTH {
            return Err(LayoutError(format!(
                "schema nesting exceeds {} levels",
                crate::format::schema::MAX_DEPTH
            )));
        }
        let id = match schema {
            Schema::Nil => self.put(slot, NodeKind::Nil, 0, 1, true),
            Schema::Bool => self.put(slot, NodeKind::Bool, 1, 1, true),
            Schema::Int { signed, bytes } => {
                let b = *bytes as usize;
                let kind = NodeKind::Int {
                    signed: *signed,
                    bytes: *bytes,
                };
                self.put(slot, kind, b, b, true)
            }
            Schema::Float { bytes } => {
                let b = *bytes as usize;
                self.put(slot, NodeKind::Float { bytes: *bytes }, b, b, true)
            }
            Schema::BigInt => self.put(slot, NodeKind::BigInt, 16, 8, false),
            Schema::Str => self.put(slot, NodeKind::Str, 16, 8, false),
            Schema::Table(_) => self.put(slot, NodeKind::Table, 16, 8, false),
            Schema::Handle(kind) => self.put(slot, NodeKind::Handle(*kind), 16, 8, false),
            Schema::List { len, elem } => {
                let elem = self.compile(elem, scope, None, depth + 1)?;
                self.put(slot, NodeKind::List { len: *len, elem }, 16, 8, false)
            }
            Schema::Optional(inner) => {
                let inner = self.compile(inner, scope, None, depth + 1)?;
                self.put(slot, NodeKind::Optional(inner), 8, 8, false)
            }
            Schema::Tuple(items) => {
                let mut members = Vec::with_capacity(items.len());
                for item in items {
                    let node = self.compile(item, scope, None, depth + 1)?;
                    members.push(Member {
                        key: String::new(),
                        offset: 0,
                        node,
                    });
                }
                self.put(slot, NodeKind::Tuple(members), 0, 1, false)
            }
            Schema::Record(fields) => {
                let mut members = Vec::with_capacity(fields.len());
                for (key, field) in fields {
                    let node = self.compile(field, scope, None, depth + 1)?;
                    members.push(Member {
                        key: key.clone(),
                        offset: 0,
                        node,
                    });
                }
                self.put(slot, NodeKind::Record(members), 0, 8, false)
            }
            Schema::Named { .. } => {
                // Declarations may be stacked (`&1A&1B...`): all their names
                // denote the same node.
                let mark = scope.len();
                let mut body = schema;
                let mut names = Vec::new();
                while let Schema::Named { name, body: inner } = body {
                    names.push(name.as_str());
                    body = inner;
                }
                let res = match body {
                    // `&A ^B` only renames an enclosing declaration `B`.
                    Schema::Recur(target) if names.contains(&target.as_str()) => {
                        Err(LayoutError(format!(
                            "recursive type '{target}' is declared as itself, so it has no finite width"
                        )))
                    }
                    Schema::Recur(_) => self.compile(body, scope, None, depth + 1),
                    _ => {
                        let id = match slot {
                            Some(id) => id,
                            // A placeholder until the body is compiled into it.
                            None => self.put(None, NodeKind::Nil, 0, 1, true),
                        };
                        scope.extend(names.iter().map(|name| (*name, id)));
                        self.decls
                            .extend(names.iter().map(|name| (id, name.to_string())));
                        self.compile(body, scope, Some(id), depth + 1)
                    }
                };
                scope.truncate(mark);
                res?
            }
            Schema::Recur(name) => match scope.iter().rev().find(|(n, _)| *n == name) {
                Some((_, id)) => *id,
                None => {
                    return Err(LayoutError(format!(
                        "back-reference to undeclared name '{name}'"
                    )))
                }
            },
        };
        Ok(id)
    }

    /// The second pass: gives every tuple and record its member offsets,
    /// width and alignment. A struct can be placed once all its members are,
    /// and lists, optionals and scalars have a fixed head whatever they
    /// contain, so repeating the sweep places every struct whose head is
    /// finite. Each sweep places at least one more node or ends the loop;
    /// sweeps in node order place children before parents, so only nested
    /// declarations cost extra sweeps.
    fn place(&mut self) -> Result<(), LayoutError> {
        let mut placed: Vec<bool> = self
            .nodes
            .iter()
            .map(|node| !matches!(node.kind, NodeKind::Tuple(_) | NodeKind::Record(_)))
            .collect();
        let mut progress = true;
        while progress {
            progress = false;
            for id in 0..self.nodes.len() {
                if placed[id] {
                    continue;
                }
                let (NodeKind::Tuple(members) | NodeKind::Record(members)) = &self.nodes[id].kind
                else {
                    continue;
                };
                if !members.iter().all(|m| placed[m.node]) {
                    continue;
                }
                let mut offsets = Vec::with_capacity(members.len());
                let mut offset = 0usize;
                let mut max_align = 1usize;
                let mut all_fixed = true;
                for m in members {
                    let node = &self.nodes[m.node];
                    offset = offset.div_ceil(node.align) * node.align;
                    offsets.push(offset);
                    offset += node.width;
                    max_align = max_align.max(node.align);
                    all_fixed &= node.fixed;
                }
                let width = offset.div_ceil(max_align) * max_align;
                let node = &mut self.nodes[id];
                let is_record = matches!(node.kind, NodeKind::Record(_));
                if let NodeKind::Tuple(members) | NodeKind::Record(members) = &mut node.kind {
                    for (m, offset) in members.iter_mut().zip(offsets) {
                        m.offset = offset;
                    }
                }
                node.width = width;
                if is_record {
                    // A record always reports alignment 8 to its container,
                    // and is never fixed width (reference behaviour).
                    node.align = 8;
                    node.fixed = false;
                } else {
                    node.align = max_align;
                    node.fixed = all_fixed;
                }
                placed[id] = true;
                progress = true;
            }
        }
        match placed.iter().position(|p| !p) {
            None => Ok(()),
            Some(id) => Err(self.infinite(id, &placed)),
        }
    }

    /// The error for an unplaced node. Every unplaced struct has an unplaced
    /// member, so following unplaced members from `start` must come back to
    /// a node already seen. That loop is a type containing itself, and it
    /// passes through a declaration: plain nesting never loops.
    fn infinite(&self, start: NodeId, placed: &[bool]) -> LayoutError {
        let unplaced_member = |id: NodeId| match &self.nodes[id].kind {
            NodeKind::Tuple(members) | NodeKind::Record(members) => {
                members.iter().find(|m| !placed[m.node]).map(|m| m.node)
            }
            _ => None,
        };
        let mut seen = vec![false; self.nodes.len()];
        let mut id = start;
        while !seen[id] {
            seen[id] = true;
            match unplaced_member(id) {
                Some(next) => id = next,
                None => break,
            }
        }
        // `id` is on the loop; walk it once to find the declaration.
        let mut name = None;
        let first = id;
        loop {
            if let Some((_, decl)) = self.decls.iter().find(|(node, _)| *node == id) {
                name = Some(decl.as_str());
            }
            match unplaced_member(id) {
                Some(next) if next != first => id = next,
                _ => break,
            }
        }
        LayoutError(format!(
            "recursive type '{}' contains itself outside any list or optional, so it has no finite width",
            name.unwrap_or("?")
        ))
    }
}
