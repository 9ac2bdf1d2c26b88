//! The text encoder of [`super`] in slices: the same three walks (container
//! ends, the checking and sizing plan, the writing of the blob), each made
//! resumable with an explicit stack instead of recursion, so a caller can
//! do a bounded amount of work now and the rest later.
//!
//! [`Sliced`] keeps only positions and counts; the layout and the text are
//! passed again at every step (they must not change in between). Each step
//! spends a budget of work units (one per value visited, one per 64 bytes
//! read or zeroed), and the result is the one-shot encoder's: the same
//! error, or the same bytes.
//!
//! Architecture Invariant: pure; no I/O.

use crate::format::json::scan::{self, Ends, EndsBuilder};
use crate::format::value::{
    EncodeError, EncodeErrorKind, Layout, NodeId, NodeKind, Path, ValueError, ValueErrorKind,
    MAX_VALUE_DEPTH,
};

use super::{align_up, member_sources, Plan, Planner, Sources, Writer, ABSENT};

/// Bytes of text read, or of blob zeroed, per work unit.
const BYTES_PER_UNIT: usize = 64;

/// A one-argument encoding in progress (see the module docs).
#[derive(Clone, Debug)]
pub struct Sliced {
    stage: Stage,
    ends: Ends,
    /// Where the root value starts.
    pos: usize,
    lists: Vec<(usize, usize)>,
    deferred: Option<EncodeError>,
    wide_ints: bool,
    size: usize,
    plan: Vec<PlanFrame>,
    write: Vec<WriteFrame>,
    /// Where the blob starts in the output buffer.
    base: usize,
    cursor: usize,
}

#[derive(Clone, Debug)]
enum Stage {
    Start,
    Ends(EndsBuilder),
    /// Planning; the root is not visited yet.
    Root,
    Plan,
    Planned,
    /// Zeroing the blob, then writing it.
    Zero,
    Write,
    Done,
}

/// A container being checked and sized; `index` is the child being
/// visited (its place in the path).
#[derive(Clone, Debug)]
enum PlanFrame {
    List {
        id: NodeId,
        pos: usize,
        next: Option<usize>,
        index: usize,
        data: usize,
    },
    Tuple {
        id: NodeId,
        next: Option<usize>,
        index: usize,
        size: usize,
    },
    Record {
        id: NodeId,
        sources: Sources,
        index: usize,
        size: usize,
    },
    Optional {
        inner: NodeId,
        pos: usize,
        /// The inner value's size, once visited.
        inner_size: Option<usize>,
    },
}

/// Out-of-line data still to write, in the one-shot writer's order.
#[derive(Clone, Debug)]
enum WriteFrame {
    Tail {
        id: NodeId,
        pos: usize,
        at: usize,
        depth: usize,
    },
    /// A list's item heads, then (if `tails`) its items' out-of-line data.
    Items {
        elem: NodeId,
        list: usize,
        next: Option<usize>,
        i: usize,
        start: usize,
        heads: bool,
        tails: bool,
        depth: usize,
    },
    Members {
        id: NodeId,
        sources: Sources,
        i: usize,
        at: usize,
        depth: usize,
    },
}

/// Calls `f` with the path of the value the innermost frame visits.
fn with_path<R>(
    layout: &Layout,
    frames: &[PlanFrame],
    parent: &Path<'_>,
    f: &mut dyn FnMut(&Path<'_>) -> R,
) -> R {
    let Some((first, rest)) = frames.split_first() else {
        return f(parent);
    };
    match first {
        PlanFrame::List { index, .. } | PlanFrame::Tuple { index, .. } => {
            with_path(layout, rest, &Path::Index(parent, *index), f)
        }
        PlanFrame::Record { id, index, .. } => {
            let key = match &layout.node(*id).kind {
                NodeKind::Record(members) => members[*index].key.as_str(),
                _ => "",
            };
            with_path(layout, rest, &Path::Field(parent, key), f)
        }
        PlanFrame::Optional { .. } => with_path(layout, rest, parent, f),
    }
}

impl Default for Sliced {
    fn default() -> Self {
        Sliced::new()
    }
}

impl Sliced {
    /// An encoding not started yet.
    pub fn new() -> Sliced {
        Sliced {
            stage: Stage::Start,
            ends: Ends::default(),
            pos: 0,
            lists: Vec::new(),
            deferred: None,
            wide_ints: false,
            size: 0,
            plan: Vec::new(),
            write: Vec::new(),
            base: 0,
            cursor: 0,
        }
    }

    /// Checks and sizes on, spending at most about `budget` units (it is
    /// lowered by what was spent); true once planned. The error is
    /// [`super::plan`]'s. `text` must be valid JSON ([`scan::validate`]) in
    /// UTF-8.
    pub fn plan_step(
        &mut self,
        layout: &Layout,
        text: &[u8],
        path: &str,
        budget: &mut usize,
    ) -> Result<bool, ValueError> {
        let bytes = text;
        if matches!(self.stage, Stage::Start) {
            self.stage = Stage::Ends(Ends::builder(bytes));
        }
        match &mut self.stage {
            Stage::Ends(builder) => {
                let done = builder.step(bytes, budget.saturating_mul(BYTES_PER_UNIT));
                *budget = 0;
                if done {
                    let builder = std::mem::take(builder);
                    self.ends = builder.finish();
                    self.stage = Stage::Root;
                }
                return Ok(false);
            }
            Stage::Root | Stage::Plan => {}
            _ => return Ok(true),
        }
        let ends = std::mem::take(&mut self.ends);
        let mut planner = Planner {
            layout,
            text: bytes,
            ends: &ends,
            lists: std::mem::take(&mut self.lists),
            deferred: self.deferred.take(),
            wide_ints: self.wide_ints,
        };
        let outcome = self.plan_walk(&mut planner, path, budget);
        self.lists = planner.lists;
        self.deferred = planner.deferred;
        self.wide_ints = planner.wide_ints;
        self.ends = ends;
        if matches!(self.stage, Stage::Planned) {
            self.lists.sort_unstable();
        }
        outcome
    }

    /// The typed encoder's error for a value the checks accept (see
    /// [`super::Plan::encode_error`]); once planned.
    pub fn encode_error(&self) -> Option<&EncodeError> {
        self.deferred.as_ref()
    }

    /// The blob's length (see [`super::Plan::size`]); once planned.
    pub fn size(&self) -> usize {
        self.size
    }

    fn plan_walk(
        &mut self,
        planner: &mut Planner<'_>,
        path: &str,
        budget: &mut usize,
    ) -> Result<bool, ValueError> {
        let layout = planner.layout;
        let text = planner.text;
        let root_path = Path::Root(path);
        if matches!(self.stage, Stage::Root) {
            self.pos = scan::skip_ws(text, 0);
            self.stage = Stage::Plan;
            let root = layout.root();
            if let Some(size) = self.visit(planner, &root_path, root, self.pos)? {
                return Ok(self.planned(layout, size));
            }
        }
        loop {
            if *budget == 0 {
                return Ok(false);
            }
            *budget -= 1;
            let Some(top) = self.plan.last_mut() else {
                return Ok(true);
            };
            // The next child of the innermost container, if any.
            let child = match top {
                PlanFrame::List { id, next, .. } => match (*next, &layout.node(*id).kind) {
                    (Some(item), NodeKind::List { elem, .. }) => {
                        *next = scan::next_item(text, item, Some(planner.ends));
                        Some((*elem, item))
                    }
                    _ => None,
                },
                PlanFrame::Tuple {
                    id, next, index, ..
                } => match (*next, &layout.node(*id).kind) {
                    (Some(item), NodeKind::Tuple(members)) if *index < members.len() => {
                        *next = scan::next_item(text, item, Some(planner.ends));
                        Some((members[*index].node, item))
                    }
                    _ => None,
                },
                PlanFrame::Record { .. } => self.next_member(planner, &root_path)?,
                PlanFrame::Optional {
                    inner,
                    pos,
                    inner_size,
                } => match inner_size {
                    None => Some((*inner, *pos)),
                    Some(_) => None,
                },
            };
            let size = match child {
                Some((id, pos)) => match self.visit(planner, &root_path, id, pos)? {
                    Some(size) => size,
                    // A container: its frame is on top now.
                    None => continue,
                },
                None => {
                    let Some(frame) = self.plan.pop() else {
                        return Ok(true);
                    };
                    self.close(planner, frame)
                }
            };
            if self.deliver(layout, size) {
                return Ok(true);
            }
        }
    }

    /// The next present member of the record on top, after handling the
    /// absent ones before it (as the one-shot planner's loop does).
    fn next_member(
        &mut self,
        planner: &mut Planner<'_>,
        root_path: &Path<'_>,
    ) -> Result<Option<(NodeId, usize)>, ValueError> {
        let layout = planner.layout;
        let depth = self.plan.len() - 1;
        let (frames, top) = self.plan.split_at_mut(depth);
        let PlanFrame::Record {
            id,
            sources,
            index,
            size,
        } = &mut top[0]
        else {
            return Ok(None);
        };
        let NodeKind::Record(members) = &layout.node(*id).kind else {
            return Ok(None);
        };
        while *index < members.len() {
            let m = &members[*index];
            let source = sources.get(*index);
            let optional = matches!(layout.node(m.node).kind, NodeKind::Optional(_));
            if source == ABSENT && !optional {
                return with_path(layout, frames, root_path, &mut |p| {
                    p.err(ValueErrorKind::MissingField(m.key.clone()))
                });
            }
            if source != ABSENT {
                return Ok(Some((m.node, source)));
            }
            if depth + 1 > MAX_VALUE_DEPTH && planner.deferred.is_none() {
                planner.deferred = Some(EncodeError::new(EncodeErrorKind::TooDeep));
            }
            *size += 8usize.saturating_sub(layout.node(m.node).width);
            *index += 1;
        }
        Ok(None)
    }

    /// Checks the value at `pos` as the next child of the innermost frame:
    /// its size for a scalar, or `None` with a frame pushed for a container.
    fn visit(
        &mut self,
        planner: &mut Planner<'_>,
        root_path: &Path<'_>,
        id: NodeId,
        pos: usize,
    ) -> Result<Option<usize>, ValueError> {
        let layout = planner.layout;
        let text = planner.text;
        let depth = self.plan.len();
        let node = layout.node(id);
        let first = if pos == ABSENT {
            None
        } else {
            text.get(pos).copied()
        };
        let container = matches!(
            node.kind,
            NodeKind::List { .. } | NodeKind::Tuple(_) | NodeKind::Record(_)
        ) || (matches!(node.kind, NodeKind::Optional(_))
            && !matches!(first, None | Some(b'n')));
        if !container || depth > MAX_VALUE_DEPTH {
            return with_path(layout, &self.plan, root_path, &mut |p| {
                planner.size(id, pos, p, depth)
            })
            .map(Some);
        }
        let ends = Some(planner.ends);
        let fail = |plan: &[PlanFrame], kind: ValueErrorKind| {
            with_path(layout, plan, root_path, &mut |p| p.err(kind.clone()))
        };
        let expected = |plan: &[PlanFrame], what: &'static str| {
            fail(
                plan,
                ValueErrorKind::Expected {
                    what,
                    got: super::shown(text, pos),
                },
            )
        };
        let frame = match &node.kind {
            NodeKind::List { len, .. } => {
                if first != Some(b'[') {
                    return expected(&self.plan, "an array");
                }
                if let Some(n) = len {
                    let got = scan::items_in(text, pos, ends).count();
                    if got as u64 != *n {
                        return fail(&self.plan, ValueErrorKind::Length { expected: *n, got });
                    }
                }
                PlanFrame::List {
                    id,
                    pos,
                    next: scan::first_item(text, pos),
                    index: 0,
                    data: 0,
                }
            }
            NodeKind::Tuple(members) => {
                if first != Some(b'[') {
                    return expected(&self.plan, "an array");
                }
                let got = scan::items_in(text, pos, ends).count();
                if got != members.len() {
                    let expected = members.len() as u64;
                    return fail(&self.plan, ValueErrorKind::Length { expected, got });
                }
                PlanFrame::Tuple {
                    id,
                    next: scan::first_item(text, pos),
                    index: 0,
                    size: node.width,
                }
            }
            NodeKind::Record(members) => {
                match first {
                    Some(b'{') => {
                        for (key, _) in scan::members_in(text, pos, ends) {
                            if !members.iter().any(|m| scan::str_eq(text, key, &m.key)) {
                                let kind = ValueErrorKind::UnknownField {
                                    field: scan::decode_string(text, key),
                                    expected: members.iter().map(|m| m.key.clone()).collect(),
                                };
                                return fail(&self.plan, kind);
                            }
                        }
                    }
                    Some(b'[') => {
                        let got = scan::items_in(text, pos, ends).count();
                        if got != members.len() {
                            let expected = members.len() as u64;
                            return fail(&self.plan, ValueErrorKind::Length { expected, got });
                        }
                    }
                    _ => return expected(&self.plan, "an object"),
                }
                PlanFrame::Record {
                    id,
                    sources: member_sources(text, pos, members, planner.ends),
                    index: 0,
                    size: node.width,
                }
            }
            NodeKind::Optional(inner) => PlanFrame::Optional {
                inner: *inner,
                pos,
                inner_size: None,
            },
            _ => return Ok(None),
        };
        self.plan.push(frame);
        Ok(None)
    }

    /// The size of a container whose children are all visited.
    fn close(&mut self, planner: &mut Planner<'_>, frame: PlanFrame) -> usize {
        let layout = planner.layout;
        match frame {
            PlanFrame::List {
                id,
                pos,
                index,
                data,
                ..
            } => {
                let NodeKind::List { elem, .. } = &layout.node(id).kind else {
                    return 16;
                };
                if index == 0 {
                    return 16;
                }
                planner.lists.push((pos, index));
                16 + layout.list_data_align(*elem) - 1 + data
            }
            PlanFrame::Tuple { size, .. } | PlanFrame::Record { size, .. } => size,
            PlanFrame::Optional {
                inner, inner_size, ..
            } => 8 + layout.node(inner).align - 1 + inner_size.unwrap_or(0),
        }
    }

    /// Adds a visited child's `size` to the innermost frame; true when it
    /// was the root (planning is over).
    fn deliver(&mut self, layout: &Layout, size: usize) -> bool {
        let Some(top) = self.plan.last_mut() else {
            return self.planned(layout, size);
        };
        match top {
            PlanFrame::List {
                id, index, data, ..
            } => {
                if let NodeKind::List { elem, .. } = &layout.node(*id).kind {
                    let elem_node = layout.node(*elem);
                    *data += if elem_node.fixed {
                        elem_node.width
                    } else {
                        size
                    };
                }
                *index += 1;
            }
            PlanFrame::Tuple {
                id,
                index,
                size: total,
                ..
            }
            | PlanFrame::Record {
                id,
                index,
                size: total,
                ..
            } => {
                if let NodeKind::Tuple(members) | NodeKind::Record(members) = &layout.node(*id).kind
                {
                    let width = layout.node(members[*index].node).width;
                    *total += size.saturating_sub(width);
                }
                *index += 1;
            }
            PlanFrame::Optional { inner_size, .. } => *inner_size = Some(size),
        }
        false
    }

    fn planned(&mut self, layout: &Layout, size: usize) -> bool {
        self.size = size.max(layout.node(layout.root()).width);
        self.stage = Stage::Planned;
        true
    }

    /// Appends the blob to `out` on from where the last step stopped
    /// (nothing else may be appended to `out` meanwhile), spending at most
    /// about `budget` units; true once written, when `out` holds what
    /// [`super::Plan::write`] appends. Only once planned.
    pub fn write_step(
        &mut self,
        layout: &Layout,
        text: &[u8],
        out: &mut Vec<u8>,
        budget: &mut usize,
    ) -> bool {
        let bytes = text;
        if matches!(self.stage, Stage::Planned) {
            self.base = out.len();
            self.cursor = layout.node(layout.root()).width;
            self.stage = Stage::Zero;
        }
        if matches!(self.stage, Stage::Zero) {
            let end = self.base + self.size;
            let room = budget.saturating_mul(BYTES_PER_UNIT);
            let upto = end.min(out.len().saturating_add(room));
            *budget = budget.saturating_sub((upto - out.len()) / BYTES_PER_UNIT);
            out.resize(upto, 0);
            if upto < end {
                *budget = 0;
                return false;
            }
            self.stage = Stage::Write;
            self.write.push(WriteFrame::Tail {
                id: layout.root(),
                pos: self.pos,
                at: 0,
                depth: 0,
            });
            // The root's head first, as `Plan::write` does.
            let pos = self.pos;
            self.with_writer(layout, bytes, out, |w| w.head(layout.root(), pos, 0));
        }
        if !matches!(self.stage, Stage::Write) {
            return matches!(self.stage, Stage::Done);
        }
        let mut frames = std::mem::take(&mut self.write);
        let done = self.with_writer(layout, bytes, out, |w| write_walk(w, &mut frames, budget));
        self.write = frames;
        if done {
            self.stage = Stage::Done;
        }
        done
    }

    /// Runs `f` with the one-shot writer over this encoding's state.
    fn with_writer<R>(
        &mut self,
        layout: &Layout,
        text: &[u8],
        out: &mut Vec<u8>,
        f: impl FnOnce(&mut Writer<'_, '_>) -> R,
    ) -> R {
        let plan = Plan {
            layout,
            text,
            pos: self.pos,
            size: self.size,
            lists: std::mem::take(&mut self.lists),
            ends: std::mem::take(&mut self.ends),
            deferred: None,
            wide_ints: self.wide_ints,
        };
        let mut writer = Writer {
            plan: &plan,
            buf: out,
            base: self.base,
            cursor: self.cursor,
        };
        let r = f(&mut writer);
        self.cursor = writer.cursor;
        self.lists = plan.lists;
        self.ends = plan.ends;
        r
    }
}

/// The one-shot writer's `tail` walk from `frames`, for about `budget`
/// units; true when nothing is left.
fn write_walk(w: &mut Writer<'_, '_>, frames: &mut Vec<WriteFrame>, budget: &mut usize) -> bool {
    let layout = w.plan.layout;
    let text = w.plan.text;
    let ends = Some(&w.plan.ends);
    loop {
        if *budget == 0 {
            return frames.is_empty();
        }
        *budget -= 1;
        let Some(frame) = frames.pop() else {
            return true;
        };
        match frame {
            WriteFrame::Tail { id, pos, at, depth } => {
                if depth > MAX_VALUE_DEPTH {
                    continue;
                }
                match &layout.node(id).kind {
                    NodeKind::List { elem, .. } => {
                        let n = w.list_len(pos);
                        if n == 0 {
                            w.put_u64(at + 8, 0);
                            continue;
                        }
                        let elem_node = layout.node(*elem);
                        w.cursor = align_up(w.cursor, layout.list_data_align(*elem));
                        let start = w.cursor;
                        w.put_u64(at + 8, start as u64);
                        let width = elem_node.width;
                        w.cursor += n * width;
                        w.reserve(start + n * width);
                        // Integers of one limb have no out-of-line data.
                        let inline_ints =
                            matches!(elem_node.kind, NodeKind::BigInt) && !w.plan.wide_ints;
                        frames.push(WriteFrame::Items {
                            elem: *elem,
                            list: pos,
                            next: scan::first_item(text, pos),
                            i: 0,
                            start,
                            heads: true,
                            tails: !elem_node.fixed && !inline_ints,
                            depth,
                        });
                    }
                    NodeKind::Tuple(members) | NodeKind::Record(members) => {
                        frames.push(WriteFrame::Members {
                            id,
                            sources: member_sources(text, pos, members, &w.plan.ends),
                            i: 0,
                            at,
                            depth,
                        });
                    }
                    NodeKind::Optional(inner) => {
                        if w.is_null(pos) {
                            continue;
                        }
                        let inner_node = layout.node(*inner);
                        w.cursor = align_up(w.cursor, inner_node.align);
                        let start = w.cursor;
                        w.put_u64(at, start as u64);
                        w.cursor += inner_node.width;
                        w.reserve(start + inner_node.width);
                        w.head(*inner, pos, start);
                        frames.push(WriteFrame::Tail {
                            id: *inner,
                            pos,
                            at: start,
                            depth: depth + 1,
                        });
                    }
                    NodeKind::Str | NodeKind::Handle(_) => {
                        let len = scan::decoded_len(text, pos);
                        *budget = budget.saturating_sub(len / BYTES_PER_UNIT);
                        w.tail(id, pos, at, depth);
                    }
                    _ => w.tail(id, pos, at, depth),
                }
            }
            WriteFrame::Items {
                elem,
                list,
                next,
                i,
                start,
                heads,
                tails,
                depth,
            } => {
                let width = layout.node(elem).width;
                let Some(item) = next else {
                    if heads && tails {
                        frames.push(WriteFrame::Items {
                            elem,
                            list,
                            next: scan::first_item(text, list),
                            i: 0,
                            start,
                            heads: false,
                            tails,
                            depth,
                        });
                    }
                    continue;
                };
                frames.push(WriteFrame::Items {
                    elem,
                    list,
                    next: scan::next_item(text, item, ends),
                    i: i + 1,
                    start,
                    heads,
                    tails,
                    depth,
                });
                if heads {
                    w.head(elem, item, start + i * width);
                } else {
                    frames.push(WriteFrame::Tail {
                        id: elem,
                        pos: item,
                        at: start + i * width,
                        depth: depth + 1,
                    });
                }
            }
            WriteFrame::Members {
                id,
                sources,
                i,
                at,
                depth,
            } => {
                let (NodeKind::Tuple(members) | NodeKind::Record(members)) = &layout.node(id).kind
                else {
                    continue;
                };
                if i >= members.len() {
                    continue;
                }
                let m = &members[i];
                let source = sources.get(i);
                frames.push(WriteFrame::Members {
                    id,
                    sources,
                    i: i + 1,
                    at,
                    depth,
                });
                frames.push(WriteFrame::Tail {
                    id: m.node,
                    pos: source,
                    at: at + m.offset,
                    depth: depth + 1,
                });
            }
        }
    }
}
