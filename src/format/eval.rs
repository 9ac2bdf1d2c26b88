//! Pure commands: compiling and evaluating the manifest's expression trees.
//!
//! A manifest command of type `pure` carries an `expr` tree instead of a pool
//! manifold: constants, record and list literals, field getters and setters,
//! string interpolation, `if`, `@throw`/`@catch`, `@show`/`@read`/`@hash` and
//! `@save`/`@load`. The server evaluates it in-process, without any pool.
//!
//! [`compile`] turns the JSON tree into a typed [`Expr`] once, at manifest load
//! time: every node tag is recognised, every node schema is parsed, and a
//! malformed tree is an error (the reference fails the whole manifest then).
//! [`run`] evaluates a compiled tree for one call. Values are plain [`Value`]
//! trees; the type of each intermediate value is the schema of the node that
//! produced it. Variables are lexically scoped. Every call runs under
//! [`Limits`] (nesting depth and a work budget), so a hostile tree can neither
//! overflow the stack nor run for ever.
//!
//! Where this evaluator deliberately differs from the reference, the
//! difference makes it stricter or deterministic: unparsable literals,
//! mismatched argument counts and ill-shaped containers are errors instead of
//! undefined behaviour; hashes of optionals do not depend on memory placement
//! (see `hash`); the file and stream intrinsics (`@open`, `@next`, ...) are
//! rejected with a catchable error; `@save` writes uncompressed packets only;
//! `@load` reads JSON, msgpack, plain text and uncompressed data packets (see
//! `persist`).
//!
//! Architecture Invariant: no I/O of its own; `@save`/`@load` go through the
//! caller's [`Host`].

mod codec;
mod compile;
mod hash;
mod pattern;
mod persist;

use std::fmt;
use std::io;

use serde_json::Value as Json;

use crate::format::schema::{self, Schema, Scope};
use crate::format::value::{BigInt, Value};

use compile::{array_field, compile_node, str_field};
use pattern::Pattern;
use persist::SaveFormat;

/// A compiled expression tree, ready to [`run`].
#[derive(Clone, Debug)]
pub struct Expr {
    root: Node,
}

/// An error compiling or evaluating an expression tree.
///
/// `Display` prints [`EvalError::message`] verbatim: for a user error that is
/// exactly the text given to `@throw`, which the MCP layer reports as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    pub kind: EvalErrorKind,
    pub message: String,
}

/// The classes of evaluation failure; they decide what `@catch` intercepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// The JSON tree is malformed (only from [`compile`]).
    Malformed,
    /// `@throw`, or a failure an intrinsic reports as catchable (`@read`
    /// parse errors, `@save`/`@load` failures, unsupported file intrinsics).
    User,
    /// A malformed data packet met by `@load` (catchable, like the reference's
    /// packet errors).
    Packet,
    /// Any other failure during evaluation; not catchable.
    Internal,
    /// A [`Limits`] bound was exceeded; not catchable.
    Limit,
}

/// File access for `@save` and `@load`, implemented by the caller.
pub trait Host {
    /// Reads a whole file of at most `limit` bytes (what the call's budget
    /// still allows): a larger one is refused with
    /// `io::ErrorKind::FileTooLarge`, without being read whole. A missing
    /// file must be `io::ErrorKind::NotFound`.
    fn read_file(&mut self, path: &str, limit: u64) -> io::Result<Vec<u8>>;
    /// Replaces `path` atomically (temporary file in the same directory,
    /// then rename), so readers never see a partial file.
    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()>;
}

/// A [`Host`] that refuses all file access.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFiles;

impl Host for NoFiles {
    fn read_file(&mut self, path: &str, _limit: u64) -> io::Result<Vec<u8>> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("file access is disabled: {path}"),
        ))
    }

    fn write_file_atomic(&mut self, path: &str, _bytes: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("file access is disabled: {path}"),
        ))
    }
}

/// Resource bounds for one evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of node evaluations (a node evaluated while
    /// evaluating another is one level deeper).
    pub max_depth: usize,
    /// Work units per call: one per node evaluated, one per value node
    /// copied, one per 16 bytes of string or file data produced.
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 256,
            max_steps: 10_000_000,
        }
    }
}

/// Deepest expression tree [`compile`] accepts. Manifests parsed from text
/// cannot exceed it: serde_json stops at 128 levels of JSON nesting, and
/// every tree level is at least one JSON level.
pub const MAX_TREE_DEPTH: usize = 128;

/// Deepest value the evaluator walks (copying, hashing, type checks).
const MAX_VALUE_DEPTH: usize = 1024;

/// Compiles the JSON expression tree of a pure command.
pub fn compile(expr: &Json) -> Result<Expr, EvalError> {
    Ok(Expr {
        root: compile_node(expr, 0)?,
    })
}

/// Evaluates a compiled tree for one call, with the default [`Limits`].
///
/// If the root is a lambda or a pattern it is applied to `args` (argument
/// `i` typed by `arg_schemas[i]`); otherwise the root is evaluated and `args`
/// are ignored. The result is checked against `ret`, so it always conforms
/// to the return schema.
pub fn run(
    expr: &Expr,
    arg_schemas: &[Schema],
    args: Vec<Value>,
    ret: &Schema,
    host: &mut dyn Host,
) -> Result<Value, EvalError> {
    run_with_limits(expr, arg_schemas, args, ret, host, Limits::default())
}

/// [`run`] with explicit [`Limits`].
pub fn run_with_limits(
    expr: &Expr,
    arg_schemas: &[Schema],
    args: Vec<Value>,
    ret: &Schema,
    host: &mut dyn Host,
    limits: Limits,
) -> Result<Value, EvalError> {
    let mut machine = Machine {
        host,
        budget: Budget {
            left: limits.max_steps,
        },
        limits,
        depth: 0,
        env: Vec::new(),
    };
    let value = match &expr.root {
        Node::Lambda(_) | Node::Pattern { .. } if args.len() != arg_schemas.len() => {
            return Err(EvalError::internal(format!(
                "{} arguments given with {} argument schemas",
                args.len(),
                arg_schemas.len()
            )));
        }
        Node::Lambda(lambda) => machine.apply_lambda(lambda, args)?,
        Node::Pattern { pattern, .. } => {
            let schemas: Vec<Option<&Schema>> = arg_schemas.iter().map(Some).collect();
            pattern::apply(&mut machine.budget, pattern, args, &schemas)?
        }
        root => machine.eval(root)?,
    };
    if let Err(e) = check_value(ret, &value) {
        return Err(EvalError::internal(format!(
            "result does not match the return schema {ret}: {e}"
        )));
    }
    Ok(value)
}

impl EvalError {
    /// True for the errors `@catch` intercepts: user and packet errors.
    pub fn is_catchable(&self) -> bool {
        matches!(self.kind, EvalErrorKind::User | EvalErrorKind::Packet)
    }

    fn new(kind: EvalErrorKind, message: impl Into<String>) -> EvalError {
        EvalError {
            kind,
            message: message.into(),
        }
    }

    fn malformed(message: impl Into<String>) -> EvalError {
        EvalError::new(EvalErrorKind::Malformed, message)
    }

    fn user(message: impl Into<String>) -> EvalError {
        EvalError::new(EvalErrorKind::User, message)
    }

    fn packet(message: impl Into<String>) -> EvalError {
        EvalError::new(EvalErrorKind::Packet, message)
    }

    fn internal(message: impl Into<String>) -> EvalError {
        EvalError::new(EvalErrorKind::Internal, message)
    }

    fn limit(message: impl Into<String>) -> EvalError {
        EvalError::new(EvalErrorKind::Limit, message)
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

// ---------------------------------------------------------------------------
// The compiled tree.

#[derive(Clone, Debug)]
enum Node {
    /// `lit` and `str`: the value is built at compile time.
    Const {
        schema: Schema,
        value: Value,
    },
    Container {
        schema: Schema,
        elements: Vec<Node>,
    },
    App {
        schema: Schema,
        func: Func,
        args: Vec<Node>,
    },
    Lambda(Lambda),
    Bound {
        schema: Schema,
        var: String,
    },
    Interpolation {
        schema: Schema,
        strings: Vec<Vec<u8>>,
    },
    Pattern {
        schema: Schema,
        pattern: Pattern,
    },
    Map {
        schema: Schema,
        func: Box<Node>,
        list: Box<Node>,
    },
    If {
        schema: Schema,
        cond: Box<Node>,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
    Throw {
        msg: Box<Node>,
    },
    Catch {
        fallible: Box<Node>,
        fallback: Box<Node>,
    },
    Show {
        schema: Schema,
        child: Box<Node>,
    },
    Read {
        schema: Schema,
        child: Box<Node>,
    },
    Hash {
        schema: Schema,
        child: Box<Node>,
    },
    Load {
        schema: Schema,
        child: Box<Node>,
    },
    Save {
        format: SaveFormat,
        level: Box<Node>,
        value: Box<Node>,
        path: Box<Node>,
    },
    /// A file or stream intrinsic: its children are compiled (so the tree is
    /// validated like the reference does) but it is rejected when evaluated.
    Unsupported {
        tag: String,
        schema: Schema,
    },
}

#[derive(Clone, Debug)]
enum Func {
    Lambda(Lambda),
    Pattern(Pattern),
    Interpolation(Vec<Vec<u8>>),
}

#[derive(Clone, Debug)]
struct Lambda {
    vars: Vec<String>,
    body: Box<Node>,
}

/// The result schema of nodes that return Unit.
static NIL: Schema = Schema::Nil;

impl Node {
    fn tag(&self) -> &str {
        match self {
            Node::Const {
                value: Value::Str(_) | Value::Handle(_),
                ..
            } => "str",
            Node::Const { .. } => "lit",
            Node::Container { .. } => "container",
            Node::App { .. } => "app",
            Node::Lambda(_) => "lambda",
            Node::Bound { .. } => "bound",
            Node::Interpolation { .. } => "interpolation",
            Node::Pattern { .. } => "pattern",
            Node::Map { .. } => "map",
            Node::If { .. } => "if",
            Node::Throw { .. } => "throw",
            Node::Catch { .. } => "catch",
            Node::Show { .. } => "show",
            Node::Read { .. } => "read",
            Node::Hash { .. } => "hash",
            Node::Load { .. } => "load",
            Node::Save { .. } => "save",
            Node::Unsupported { tag, .. } => tag,
        }
    }

    /// The schema of the value this node evaluates to (`None` for a lambda).
    fn result_schema(&self) -> Option<&Schema> {
        match self {
            Node::Const { schema, .. }
            | Node::Container { schema, .. }
            | Node::App { schema, .. }
            | Node::Bound { schema, .. }
            | Node::Interpolation { schema, .. }
            | Node::Pattern { schema, .. }
            | Node::Map { schema, .. }
            | Node::If { schema, .. }
            | Node::Show { schema, .. }
            | Node::Read { schema, .. }
            | Node::Hash { schema, .. }
            | Node::Load { schema, .. }
            | Node::Unsupported { schema, .. } => Some(schema),
            Node::Throw { .. } | Node::Save { .. } => Some(&NIL),
            Node::Catch { fallback, .. } => fallback.result_schema(),
            Node::Lambda(_) => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Evaluation.

/// The work budget of one call, shared by everything that evaluates or
/// copies values.
struct Budget {
    left: u64,
}

impl Budget {
    fn charge(&mut self, units: u64) -> Result<(), EvalError> {
        if units > self.left {
            self.left = 0;
            return Err(EvalError::limit("evaluation step limit exceeded"));
        }
        self.left -= units;
        Ok(())
    }

    fn charge_bytes(&mut self, n: usize) -> Result<(), EvalError> {
        self.charge(n as u64 / 16)
    }

    /// The most bytes [`Budget::charge_bytes`] still accepts.
    fn bytes_left(&self) -> u64 {
        self.left.saturating_mul(16).saturating_add(15)
    }

    /// Copies a value, charging for its size as it goes, so repeated
    /// duplication (`let y = [x, x]` in a chain) cannot blow up memory.
    fn copy(&mut self, value: &Value) -> Result<Value, EvalError> {
        self.copy_at(value, 0)
    }

    fn copy_at(&mut self, value: &Value, depth: usize) -> Result<Value, EvalError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(EvalError::limit(format!(
                "value nesting exceeds {MAX_VALUE_DEPTH} levels"
            )));
        }
        self.charge(1)?;
        let mut many = |items: &[Value]| -> Result<Vec<Value>, EvalError> {
            items.iter().map(|v| self.copy_at(v, depth + 1)).collect()
        };
        Ok(match value {
            Value::List(items) => Value::List(many(items)?),
            Value::Tuple(items) => Value::Tuple(many(items)?),
            Value::Record(items) => Value::Record(many(items)?),
            Value::Optional(Some(inner)) => {
                Value::Optional(Some(Box::new(self.copy_at(inner, depth + 1)?)))
            }
            Value::Str(bytes) | Value::Handle(bytes) => {
                self.charge_bytes(bytes.len())?;
                value.clone()
            }
            Value::BigInt(n) => {
                self.charge(n.limbs.len() as u64 / 2)?;
                value.clone()
            }
            Value::Nil
            | Value::Bool(_)
            | Value::Int(_)
            | Value::UInt(_)
            | Value::Float(_)
            | Value::Optional(None) => value.clone(),
        })
    }
}

struct Machine<'a, 'h> {
    host: &'h mut dyn Host,
    budget: Budget,
    limits: Limits,
    /// Current nesting of [`Machine::eval`].
    depth: usize,
    /// Variable bindings, innermost last. Lambdas are only ever applied where
    /// they are written, so a stack of bindings is lexical scoping.
    env: Vec<(&'a str, Value)>,
}

impl<'a> Machine<'a, '_> {
    fn eval(&mut self, node: &'a Node) -> Result<Value, EvalError> {
        self.budget.charge(1)?;
        if self.depth >= self.limits.max_depth {
            return Err(EvalError::limit(format!(
                "evaluation nesting exceeds {} levels",
                self.limits.max_depth
            )));
        }
        self.depth += 1;
        let res = self.eval_node(node);
        self.depth -= 1;
        res
    }

    fn eval_node(&mut self, node: &'a Node) -> Result<Value, EvalError> {
        match node {
            Node::Const { value, .. } => self.budget.copy(value),
            Node::Container { schema, elements } => {
                let mut values = Vec::with_capacity(elements.len());
                for element in elements {
                    values.push(self.eval(element)?);
                }
                Ok(match schema.peel_named() {
                    Schema::List { .. } => Value::List(values),
                    Schema::Tuple(_) => Value::Tuple(values),
                    Schema::Record(_) => Value::Record(values),
                    // compile() allows at most one element for an optional.
                    _ => Value::Optional(values.pop().map(Box::new)),
                })
            }
            Node::App { func, args, .. } => self.apply(func, args),
            Node::Bound { var, .. } => match self.env.iter().rev().find(|(name, _)| name == var) {
                Some((_, value)) => self.budget.copy(value),
                None => Err(EvalError::internal(format!("Unbound variable {var}"))),
            },
            Node::Lambda(_) | Node::Interpolation { .. } | Node::Pattern { .. } => {
                Err(EvalError::internal(format!(
                    "a {} node can only be applied, not evaluated as a value",
                    node.tag()
                )))
            }
            Node::Map { func, list, .. } => self.map(func, list),
            Node::If {
                cond,
                then,
                otherwise,
                ..
            } => match self.eval(cond)? {
                Value::Bool(true) => self.eval(then),
                Value::Bool(false) => self.eval(otherwise),
                _ => Err(EvalError::internal("if condition is not a Bool")),
            },
            Node::Throw { msg } => match self.eval(msg)? {
                Value::Str(bytes) => Err(EvalError::user(String::from_utf8_lossy(&bytes))),
                _ => Err(EvalError::internal("@throw message is not a Str")),
            },
            Node::Catch { fallible, fallback } => match self.eval(fallible) {
                Err(e) if e.is_catchable() => self.eval(fallback),
                res => res,
            },
            Node::Show { child, .. } => {
                let value = self.eval(child)?;
                let schema = checked_schema("@show", child, &value)?;
                let text = codec::to_json(schema, &value)
                    .map_err(|e| EvalError::internal(format!("@show: {e}")))?;
                self.budget.charge_bytes(text.len())?;
                Ok(Value::Str(text.into_bytes()))
            }
            Node::Read { schema, child } => {
                let Value::Str(bytes) = self.eval(child)? else {
                    return Err(EvalError::internal("@read argument is not a Str"));
                };
                if bytes.is_empty() {
                    return Err(EvalError::user("@read: empty input string"));
                }
                self.budget.charge_bytes(bytes.len())?;
                let text = std::str::from_utf8(&bytes)
                    .map_err(|e| EvalError::user(format!("@read: {e}")))?;
                let json: Json =
                    serde_json::from_str(text).map_err(|e| EvalError::user(e.to_string()))?;
                codec::from_json(schema, &json).map_err(EvalError::user)
            }
            Node::Hash { child, .. } => {
                let value = self.eval(child)?;
                let schema = checked_schema("@hash", child, &value)?;
                let h = hash::hash_value(schema, &value)
                    .map_err(|e| EvalError::internal(format!("@hash: {e}")))?;
                Ok(Value::Str(format!("{h:016x}").into_bytes()))
            }
            Node::Save {
                format,
                level,
                value,
                path,
            } => {
                let level = match pattern::int_as_i64(&self.eval(level)?) {
                    Ok(n) if (0..=9).contains(&n) => n as u8,
                    Ok(n) => {
                        return Err(EvalError::internal(format!(
                            "@save compression level must be in 0..=9, got {n}"
                        )));
                    }
                    Err(e) => {
                        return Err(EvalError::internal(format!("@save compression level: {e}")))
                    }
                };
                let data = self.eval(value)?;
                let schema = checked_schema("@save", value, &data)?;
                let path = self.eval_path(path, "@save")?;
                persist::save(self.host, *format, level, schema, &data, &path)?;
                Ok(Value::Nil)
            }
            Node::Load { schema, child } => {
                let path = self.eval_path(child, "@load")?;
                persist::load(self.host, &mut self.budget, schema, &path)
            }
            Node::Unsupported { tag, .. } => Err(EvalError::user(format!(
                "{tag}: file and stream handles are not supported by this server"
            ))),
        }
    }

    fn eval_path(&mut self, node: &'a Node, what: &str) -> Result<String, EvalError> {
        match self.eval(node)? {
            Value::Str(bytes) | Value::Handle(bytes) => String::from_utf8(bytes)
                .map_err(|_| EvalError::user(format!("{what}: path is not valid UTF-8"))),
            _ => Err(EvalError::internal(format!("{what}: path is not a Str"))),
        }
    }

    /// `app`: all arguments are evaluated first, left to right.
    fn apply(&mut self, func: &'a Func, args: &'a [Node]) -> Result<Value, EvalError> {
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            values.push(self.eval(arg)?);
        }
        match func {
            Func::Lambda(lambda) => self.apply_lambda(lambda, values),
            Func::Pattern(pattern) => {
                let schemas: Vec<Option<&Schema>> = args.iter().map(Node::result_schema).collect();
                pattern::apply(&mut self.budget, pattern, values, &schemas)
            }
            Func::Interpolation(strings) => self.interpolate(strings, values),
        }
    }

    fn apply_lambda(&mut self, lambda: &'a Lambda, args: Vec<Value>) -> Result<Value, EvalError> {
        if args.len() != lambda.vars.len() {
            return Err(EvalError::internal(format!(
                "lambda of {} parameters applied to {} arguments",
                lambda.vars.len(),
                args.len()
            )));
        }
        let mark = self.env.len();
        self.env
            .extend(lambda.vars.iter().map(String::as_str).zip(args));
        let res = self.eval(&lambda.body);
        self.env.truncate(mark);
        res
    }

    fn interpolate(&mut self, strings: &[Vec<u8>], args: Vec<Value>) -> Result<Value, EvalError> {
        if strings.len() != args.len() + 1 {
            return Err(EvalError::internal(format!(
                "interpolation of {} strings applied to {} arguments",
                strings.len(),
                args.len()
            )));
        }
        let mut pieces = Vec::with_capacity(args.len());
        for (i, arg) in args.into_iter().enumerate() {
            match arg {
                Value::Str(bytes) => pieces.push(bytes),
                _ => {
                    return Err(EvalError::internal(format!(
                        "interpolation argument {i} is not a Str"
                    )))
                }
            }
        }
        let total = strings.iter().chain(&pieces).map(Vec::len).sum();
        self.budget.charge_bytes(total)?;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&strings[0]);
        for (piece, string) in pieces.iter().zip(&strings[1..]) {
            out.extend_from_slice(piece);
            out.extend_from_slice(string);
        }
        Ok(Value::Str(out))
    }

    fn map(&mut self, func: &'a Node, list: &'a Node) -> Result<Value, EvalError> {
        let Value::List(items) = self.eval(list)? else {
            return Err(EvalError::internal("map list is not a list"));
        };
        if items.is_empty() {
            return Ok(Value::List(Vec::new()));
        }
        // Like the reference, the function is only checked for a non-empty list.
        let Node::Lambda(lambda) = func else {
            return Err(EvalError::internal("Map func must be a lambda"));
        };
        if lambda.vars.len() != 1 {
            return Err(EvalError::internal(
                "Map lambda must take exactly one argument",
            ));
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(self.apply_lambda(lambda, vec![item])?);
        }
        Ok(Value::List(out))
    }
}

/// The schema of `node`'s value, after checking that `value` conforms to it
/// (the codecs may assume they are given matching values).
fn checked_schema<'n>(what: &str, node: &'n Node, value: &Value) -> Result<&'n Schema, EvalError> {
    let Some(schema) = node.result_schema() else {
        return Err(EvalError::internal(format!(
            "{what}: a {} node has no value",
            node.tag()
        )));
    };
    match check_value(schema, value) {
        Ok(()) => Ok(schema),
        Err(e) => Err(EvalError::internal(format!(
            "{what}: value does not match its schema {schema}: {e}"
        ))),
    }
}

/// Checks that `value` has the shape `schema` describes (fixed-length lists
/// are not checked; integers are range-checked).
fn check_value(schema: &Schema, value: &Value) -> Result<(), String> {
    check_at(schema, &mut Scope::new(), value, 0)
}

fn check_at<'s>(
    schema: &'s Schema,
    scope: &mut Scope<'s>,
    value: &Value,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("value nesting exceeds {MAX_VALUE_DEPTH} levels"));
    }
    let mark = scope.depth();
    let res = match scope.enter(schema) {
        Some(node) => check_node(node, scope, value, depth),
        None => Err(format!("unresolved back-reference in {schema}")),
    };
    scope.truncate(mark);
    res
}

fn check_node<'s>(
    node: &'s Schema,
    scope: &mut Scope<'s>,
    value: &Value,
    depth: usize,
) -> Result<(), String> {
    let mut all = |schemas: &mut dyn Iterator<Item = &'s Schema>, values: &[Value]| {
        schemas
            .zip(values)
            .try_for_each(|(s, v)| check_at(s, scope, v, depth + 1))
    };
    let ok = match (node, value) {
        (Schema::Nil, Value::Nil)
        | (Schema::Bool, Value::Bool(_))
        | (Schema::Float { .. }, Value::Float(_))
        | (Schema::BigInt, Value::BigInt(_))
        | (Schema::Str, Value::Str(_))
        | (Schema::Handle(_), Value::Handle(_))
        | (Schema::Optional(_), Value::Optional(None)) => true,
        (
            Schema::Int {
                signed: true,
                bytes,
            },
            Value::Int(i),
        ) => {
            let bits = *bytes as u32 * 8;
            bits >= 64 || (*i >= -(1i64 << (bits - 1)) && *i < 1i64 << (bits - 1))
        }
        (
            Schema::Int {
                signed: false,
                bytes,
            },
            Value::UInt(u),
        ) => *bytes >= 8 || *u < 1u64 << (*bytes as u32 * 8),
        (Schema::Optional(inner), Value::Optional(Some(v))) => {
            return check_at(inner, scope, v, depth + 1)
        }
        (Schema::List { elem, .. }, Value::List(items)) => {
            return items
                .iter()
                .try_for_each(|v| check_at(elem, scope, v, depth + 1));
        }
        (Schema::Tuple(members), Value::Tuple(items)) if members.len() == items.len() => {
            return all(&mut members.iter(), items);
        }
        (Schema::Record(fields), Value::Record(items)) if fields.len() == items.len() => {
            return all(&mut fields.iter().map(|(_, s)| s), items);
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("expected {node}, got {}", describe(value)))
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Nil => "null".into(),
        Value::Bool(b) => format!("Bool {b}"),
        Value::Int(i) => format!("integer {i}"),
        Value::UInt(u) => format!("unsigned integer {u}"),
        Value::Float(f) => format!("float {}", super::decimal::shortest(*f)),
        Value::BigInt(_) => "Int".into(),
        Value::Str(_) => "Str".into(),
        Value::List(items) => format!("list of {}", items.len()),
        Value::Tuple(items) => format!("tuple of {}", items.len()),
        Value::Record(items) => format!("record of {}", items.len()),
        Value::Optional(_) => "optional".into(),
        Value::Handle(_) => "file handle".into(),
    }
}

#[cfg(test)]
mod tests;
