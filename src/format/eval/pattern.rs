//! Selector patterns: field getters, setters and bracket indexing.
//!
//! A pattern names one or more *terminals* inside a tuple or record (by
//! position or by key), possibly stepping through list elements with
//! runtime bracket indices. Applied to one receiver it is a getter; applied
//! to a receiver plus new values it is a setter; the bracket leaves index or
//! slice a list with Python semantics. Keys are resolved against the
//! receiver's schema at application time, as the reference does.

use serde_json::Value as Json;

use super::{array_field, str_field, Budget, EvalError, MAX_TREE_DEPTH};
use crate::format::schema::{Schema, Scope};
use crate::format::value::Value;

/// A compiled selector tree.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Pattern {
    /// A terminal: the selected value itself.
    End,
    /// Tuple members or record fields by position.
    Idx(Vec<(usize, Pattern)>),
    /// Record fields by name.
    Key(Vec<(String, Pattern)>),
    /// `None`: the leaf form (`[index, list]` arguments); `Some`: a chain
    /// step that continues into the selected element.
    BracketIndex(Option<Box<Pattern>>),
    /// Always a terminal.
    BracketSlice,
}

pub(super) fn compile(j: &Json, depth: usize) -> Result<Pattern, EvalError> {
    if depth > MAX_TREE_DEPTH {
        return Err(EvalError::malformed(format!(
            "expression tree nesting exceeds {MAX_TREE_DEPTH} levels"
        )));
    }
    let Some(kind) = j.get("type").and_then(Json::as_str) else {
        return Err(EvalError::malformed("Pattern missing 'type' field"));
    };
    let sub = |sel: &Json| compile(sel.get("sub").unwrap_or(&Json::Null), depth + 1);
    let pattern = match kind {
        "end" => Pattern::End,
        "bracket_index" => match j.get("sub") {
            Some(s) => Pattern::BracketIndex(Some(Box::new(compile(s, depth + 1)?))),
            None => Pattern::BracketIndex(None),
        },
        "bracket_slice" => Pattern::BracketSlice,
        "idx" => {
            let mut selectors = Vec::new();
            for sel in array_field(j, "selectors") {
                // The reference reads the index as a float and casts it
                // (saturating; missing or negative becomes 0).
                let index = sel.get("index").and_then(Json::as_f64).unwrap_or(0.0) as usize;
                selectors.push((index, sub(sel)?));
            }
            Pattern::Idx(selectors)
        }
        "key" => {
            let mut selectors = Vec::new();
            for sel in array_field(j, "selectors") {
                selectors.push((str_field(sel, "key").to_string(), sub(sel)?));
            }
            Pattern::Key(selectors)
        }
        other => {
            return Err(EvalError::malformed(format!(
                "Unknown pattern type: {other}"
            )))
        }
    };
    Ok(pattern)
}

/// How many runtime bracket bounds a getter with this pattern consumes:
/// one per bracket index, three per slice.
fn arity(pattern: &Pattern) -> usize {
    match pattern {
        Pattern::End => 0,
        Pattern::BracketIndex(sub) => 1 + sub.as_deref().map_or(0, arity),
        Pattern::BracketSlice => 3,
        Pattern::Idx(sels) => sels.iter().map(|(_, p)| arity(p)).sum(),
        Pattern::Key(sels) => sels.iter().map(|(_, p)| arity(p)).sum(),
    }
}

/// The number of terminals, in depth-first order.
fn terminals(pattern: &Pattern) -> usize {
    match pattern {
        Pattern::End | Pattern::BracketSlice => 1,
        Pattern::BracketIndex(sub) => sub.as_deref().map_or(0, terminals),
        Pattern::Idx(sels) => sels.iter().map(|(_, p)| terminals(p)).sum(),
        Pattern::Key(sels) => sels.iter().map(|(_, p)| terminals(p)).sum(),
    }
}

/// `app(pattern, args)`; `schemas[i]` is the schema of `args[i]`.
pub(super) fn apply(
    budget: &mut Budget,
    pattern: &Pattern,
    mut args: Vec<Value>,
    schemas: &[Option<&Schema>],
) -> Result<Value, EvalError> {
    let n = args.len();
    match pattern {
        Pattern::BracketIndex(None) => {
            if n != 2 {
                return Err(EvalError::internal(
                    "BracketIndex expects 2 args (index, receiver)",
                ));
            }
            let list = args.pop().unwrap_or(Value::Nil);
            let Value::List(mut items) = list else {
                return Err(EvalError::internal("bracket receiver is not a list"));
            };
            let i = resolve_index(&args[0], items.len())?;
            // The list is ours: move the element out instead of copying it.
            Ok(items.swap_remove(i))
        }
        Pattern::BracketSlice => {
            if n != 4 {
                return Err(EvalError::internal(
                    "BracketSlice expects 4 args (start, stop, step, receiver)",
                ));
            }
            slice(budget, &args[0], &args[1], &args[2], &args[3])
        }
        _ => {
            let a = arity(pattern);
            if a > 0 && n == a + 1 {
                let receiver = args.pop().unwrap_or(Value::Nil);
                get(
                    budget,
                    pattern,
                    receiver_schema(schemas, a)?,
                    &receiver,
                    &args,
                )
            } else if n == 1 {
                get(budget, pattern, receiver_schema(schemas, 0)?, &args[0], &[])
            } else if n > 1 {
                let new_values = args.split_off(1);
                let receiver = args.pop().unwrap_or(Value::Nil);
                set(pattern, receiver_schema(schemas, 0)?, receiver, new_values)
            } else {
                Err(EvalError::internal("No arguments provided to pattern"))
            }
        }
    }
}

fn receiver_schema<'s>(schemas: &[Option<&'s Schema>], i: usize) -> Result<&'s Schema, EvalError> {
    schemas
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| EvalError::internal("pattern receiver has no schema"))
}

fn get(
    budget: &mut Budget,
    pattern: &Pattern,
    schema: &Schema,
    receiver: &Value,
    bounds: &[Value],
) -> Result<Value, EvalError> {
    let mut getter = Getter {
        budget,
        bounds,
        cursor: 0,
        out: Vec::new(),
    };
    getter.walk(pattern, schema, &mut Scope::new(), receiver)?;
    let mut out = getter.out;
    // With one terminal the result is that value, even if it is a tuple.
    if terminals(pattern) > 1 {
        Ok(Value::Tuple(out))
    } else {
        out.pop()
            .ok_or_else(|| EvalError::internal("pattern selects no value"))
    }
}

struct Getter<'b, 'v> {
    budget: &'b mut Budget,
    /// Runtime bracket bounds, consumed in depth-first order.
    bounds: &'v [Value],
    cursor: usize,
    /// Terminal values found so far.
    out: Vec<Value>,
}

impl Getter<'_, '_> {
    fn walk<'s>(
        &mut self,
        pattern: &Pattern,
        schema: &'s Schema,
        scope: &mut Scope<'s>,
        value: &Value,
    ) -> Result<(), EvalError> {
        let mark = scope.depth();
        let res = match scope.enter(schema) {
            Some(node) => self.walk_node(pattern, node, scope, value),
            None => Err(EvalError::internal(format!(
                "unresolved back-reference in {schema}"
            ))),
        };
        scope.truncate(mark);
        res
    }

    fn walk_node<'s>(
        &mut self,
        pattern: &Pattern,
        node: &'s Schema,
        scope: &mut Scope<'s>,
        value: &Value,
    ) -> Result<(), EvalError> {
        match pattern {
            Pattern::End => {
                let copy = self.budget.copy(value)?;
                self.out.push(copy);
            }
            Pattern::Idx(sels) => {
                for (i, sub) in sels {
                    let (member_schema, member) = member(node, value, *i)?;
                    self.walk(sub, member_schema, scope, member)?;
                }
            }
            Pattern::Key(sels) => {
                for (key, sub) in sels {
                    let (member_schema, member) = member(node, value, key_index(node, key)?)?;
                    self.walk(sub, member_schema, scope, member)?;
                }
            }
            Pattern::BracketIndex(None) => {
                return Err(EvalError::internal(
                    "BracketIndex chain step requires exactly one sub-selector",
                ));
            }
            Pattern::BracketIndex(Some(sub)) => {
                let Some(bound) = self.bounds.get(self.cursor) else {
                    return Err(EvalError::internal(
                        "bracket-index step exhausted runtime args",
                    ));
                };
                self.cursor += 1;
                let (Schema::List { elem, .. }, Value::List(items)) = (node, value) else {
                    return Err(EvalError::internal(format!(
                        "bracket receiver of schema {node} is not a list"
                    )));
                };
                let i = resolve_index(bound, items.len())?;
                self.walk(sub, elem, scope, &items[i])?;
            }
            Pattern::BracketSlice => {
                let Some([start, stop, step]) = self.bounds.get(self.cursor..self.cursor + 3)
                else {
                    return Err(EvalError::internal(
                        "bracket-slice step needs 3 runtime args",
                    ));
                };
                self.cursor += 3;
                let sliced = slice(self.budget, start, stop, step, value)?;
                self.out.push(sliced);
            }
        }
        Ok(())
    }
}

fn set(
    pattern: &Pattern,
    schema: &Schema,
    mut receiver: Value,
    new_values: Vec<Value>,
) -> Result<Value, EvalError> {
    if arity(pattern) > 0 {
        return Err(EvalError::internal(
            "bracket patterns cannot be used as setters",
        ));
    }
    let n = terminals(pattern);
    if n != new_values.len() {
        return Err(EvalError::internal(format!(
            "pattern setter selects {n} fields but got {} new values",
            new_values.len()
        )));
    }
    let mut new_values = new_values.into_iter();
    set_walk(
        pattern,
        schema,
        &mut Scope::new(),
        &mut receiver,
        &mut new_values,
    )?;
    Ok(receiver)
}

fn set_walk<'s>(
    pattern: &Pattern,
    schema: &'s Schema,
    scope: &mut Scope<'s>,
    value: &mut Value,
    new_values: &mut std::vec::IntoIter<Value>,
) -> Result<(), EvalError> {
    let mark = scope.depth();
    let Some(node) = scope.enter(schema) else {
        return Err(EvalError::internal(format!(
            "unresolved back-reference in {schema}"
        )));
    };
    let mut step = |i: usize, sub: &Pattern, scope: &mut Scope<'s>, value: &mut Value| {
        let (member_schema, member) = member_mut(node, value, i)?;
        set_walk(sub, member_schema, scope, member, new_values)
    };
    let res = match pattern {
        Pattern::End => match new_values.next() {
            Some(new) => {
                *value = new;
                Ok(())
            }
            None => Err(EvalError::internal("pattern setter ran out of new values")),
        },
        Pattern::Idx(sels) => sels
            .iter()
            .try_for_each(|(i, sub)| step(*i, sub, scope, value)),
        Pattern::Key(sels) => sels
            .iter()
            .try_for_each(|(key, sub)| step(key_index(node, key)?, sub, scope, value)),
        Pattern::BracketIndex(_) | Pattern::BracketSlice => Err(EvalError::internal(
            "bracket patterns cannot be used as setters",
        )),
    };
    scope.truncate(mark);
    res
}

fn key_index(node: &Schema, key: &str) -> Result<usize, EvalError> {
    let fields: &[(String, Schema)] = match node {
        Schema::Record(fields) => fields,
        _ => &[],
    };
    match fields.iter().position(|(k, _)| k == key) {
        Some(i) => Ok(i),
        None => Err(EvalError::internal(format!(
            "Pattern contains key missing in schema: {key}"
        ))),
    }
}

/// The schema of member `i` of a tuple or record schema.
fn member_schema(node: &Schema, i: usize) -> Result<&Schema, EvalError> {
    let n = match node {
        Schema::Tuple(members) => members.len(),
        Schema::Record(fields) => fields.len(),
        _ => {
            return Err(EvalError::internal(format!(
                "pattern receiver of schema {node} is not a tuple or record"
            )))
        }
    };
    match node {
        Schema::Tuple(members) if i < n => Ok(&members[i]),
        Schema::Record(fields) if i < n => Ok(&fields[i].1),
        _ => Err(EvalError::internal(format!(
            "Pattern child index {i} out of range for schema size {n}"
        ))),
    }
}

fn member<'s, 'v>(
    node: &'s Schema,
    value: &'v Value,
    i: usize,
) -> Result<(&'s Schema, &'v Value), EvalError> {
    let schema = member_schema(node, i)?;
    match value {
        Value::Tuple(items) | Value::Record(items) if i < items.len() => Ok((schema, &items[i])),
        _ => Err(EvalError::internal(format!(
            "pattern receiver does not match its schema {node}"
        ))),
    }
}

fn member_mut<'s, 'v>(
    node: &'s Schema,
    value: &'v mut Value,
    i: usize,
) -> Result<(&'s Schema, &'v mut Value), EvalError> {
    let schema = member_schema(node, i)?;
    match value {
        Value::Tuple(items) | Value::Record(items) if i < items.len() => {
            Ok((schema, &mut items[i]))
        }
        _ => Err(EvalError::internal(format!(
            "pattern receiver does not match its schema {node}"
        ))),
    }
}

/// An integer argument read as i64, as the reference reads bracket bounds
/// and `@save` levels (an unsigned 64-bit value wraps).
pub(super) fn int_as_i64(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(i) => Ok(*i),
        Value::UInt(u) => Ok(*u as i64),
        Value::BigInt(n) => match n.limbs.as_slice() {
            [] => Ok(0),
            [limb] => Ok(*limb as i64),
            _ => Err("Bracket bound: BigInt with more than 1 limb does not fit in i64".into()),
        },
        other => Err(format!(
            "expected an integer, got {}",
            super::describe(other)
        )),
    }
}

/// A bracket bound: an integer or an optional integer (`None` when absent).
fn optional_int(value: &Value) -> Result<Option<i64>, EvalError> {
    let res = match value {
        Value::Optional(None) => return Ok(None),
        Value::Optional(Some(inner)) => int_as_i64(inner),
        other => int_as_i64(other),
    };
    res.map(Some).map_err(EvalError::internal)
}

/// Resolves a bracket index against a list of `n` elements (negative counts
/// from the end).
fn resolve_index(bound: &Value, n: usize) -> Result<usize, EvalError> {
    let Some(raw) = optional_int(bound)? else {
        return Err(EvalError::internal("Bracket index cannot be Null"));
    };
    let n = n as i64;
    // raw < 0 here, so raw + n cannot overflow.
    let i = if raw < 0 { raw + n } else { raw };
    if i < 0 || i >= n {
        return Err(EvalError::internal(format!(
            "Bracket index {raw} out of bounds for array of size {n}"
        )));
    }
    Ok(i as usize)
}

/// `list[start:stop:step]` with Python's rules.
fn slice(
    budget: &mut Budget,
    start: &Value,
    stop: &Value,
    step: &Value,
    list: &Value,
) -> Result<Value, EvalError> {
    let Value::List(items) = list else {
        return Err(EvalError::internal("bracket receiver is not a list"));
    };
    let n = items.len() as i64;
    let step = optional_int(step)?.unwrap_or(1);
    if step == 0 {
        return Err(EvalError::internal("Bracket slice step cannot be 0"));
    }
    let norm = |v: i64| if v < 0 { v + n } else { v };
    // For a negative step -1 is the exclusive lower end, distinct from an
    // explicit -1 (which normalises to n - 1).
    let clamp = |v: i64| {
        if step > 0 {
            v.clamp(0, n)
        } else {
            v.clamp(-1, n - 1)
        }
    };
    let start = match optional_int(start)? {
        Some(v) => clamp(norm(v)),
        None if step > 0 => 0,
        None => n - 1,
    };
    let stop = match optional_int(stop)? {
        Some(v) => clamp(norm(v)),
        None if step > 0 => n,
        None => -1,
    };
    let mut out = Vec::new();
    let mut i = start;
    while if step > 0 { i < stop } else { i > stop } {
        // start and stop are clamped into [-1, n], so i indexes the list.
        out.push(budget.copy(&items[i as usize])?);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(Value::List(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(items: &[i64]) -> Value {
        Value::List(items.iter().map(|i| Value::Int(*i)).collect())
    }

    fn bound(v: Option<i64>) -> Value {
        Value::Optional(v.map(|i| Box::new(Value::Int(i))))
    }

    #[track_caller]
    fn check_slice(
        n: i64,
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
        expected: Result<&[i64], &str>,
    ) {
        let list = ints(&(0..n).collect::<Vec<_>>());
        let mut budget = Budget { left: 1_000_000 };
        let res = slice(
            &mut budget,
            &bound(start),
            &bound(stop),
            &bound(step),
            &list,
        );
        match (res, expected) {
            (Ok(v), Ok(want)) => assert_eq!(v, ints(want), "[{start:?}:{stop:?}:{step:?}] of {n}"),
            (Err(e), Err(want)) => assert_eq!(e.message, want),
            (res, want) => {
                panic!("[{start:?}:{stop:?}:{step:?}] of {n}: got {res:?}, want {want:?}")
            }
        }
    }

    #[test]
    fn slices_follow_python() {
        // Each row was checked against Python's list slicing.
        check_slice(5, None, None, None, Ok(&[0, 1, 2, 3, 4]));
        check_slice(5, Some(1), Some(3), None, Ok(&[1, 2]));
        check_slice(5, None, None, Some(-1), Ok(&[4, 3, 2, 1, 0]));
        check_slice(5, None, None, Some(2), Ok(&[0, 2, 4]));
        check_slice(5, None, None, Some(-2), Ok(&[4, 2, 0]));
        check_slice(5, Some(-2), None, None, Ok(&[3, 4]));
        check_slice(5, None, Some(-2), None, Ok(&[0, 1, 2]));
        check_slice(5, Some(-1), None, Some(-1), Ok(&[4, 3, 2, 1, 0]));
        check_slice(5, Some(3), Some(0), Some(-1), Ok(&[3, 2, 1]));
        check_slice(5, Some(3), Some(-1), Some(-1), Ok(&[]));
        check_slice(5, Some(-100), Some(100), None, Ok(&[0, 1, 2, 3, 4]));
        check_slice(5, Some(100), Some(-100), Some(-1), Ok(&[4, 3, 2, 1, 0]));
        check_slice(5, Some(100), None, None, Ok(&[]));
        check_slice(5, Some(4), Some(1), None, Ok(&[]));
        check_slice(5, Some(1), Some(4), Some(-1), Ok(&[]));
        check_slice(0, None, None, None, Ok(&[]));
        check_slice(0, None, None, Some(-1), Ok(&[]));
        check_slice(5, None, None, Some(i64::MAX), Ok(&[0]));
        check_slice(5, None, None, Some(i64::MIN), Ok(&[4]));
        check_slice(
            5,
            Some(i64::MIN),
            Some(i64::MAX),
            None,
            Ok(&[0, 1, 2, 3, 4]),
        );
        check_slice(
            5,
            None,
            None,
            Some(0),
            Err("Bracket slice step cannot be 0"),
        );
        check_slice(
            0,
            None,
            None,
            Some(0),
            Err("Bracket slice step cannot be 0"),
        );
    }

    #[track_caller]
    fn check_index(n: usize, index: Value, expected: Result<usize, &str>) {
        match (resolve_index(&index, n), expected) {
            (Ok(i), Ok(want)) => assert_eq!(i, want),
            (Err(e), Err(want)) => assert_eq!(e.message, want),
            (res, want) => panic!("{index:?} of {n}: got {res:?}, want {want:?}"),
        }
    }

    #[test]
    fn bracket_indices() {
        use crate::format::value::BigInt;
        check_index(3, Value::Int(0), Ok(0));
        check_index(3, Value::Int(2), Ok(2));
        check_index(3, Value::Int(-1), Ok(2));
        check_index(3, Value::Int(-3), Ok(0));
        check_index(3, Value::UInt(1), Ok(1));
        check_index(3, Value::BigInt(BigInt { limbs: vec![1] }), Ok(1));
        check_index(3, bound(Some(-2)), Ok(1));
        check_index(
            3,
            Value::Int(3),
            Err("Bracket index 3 out of bounds for array of size 3"),
        );
        check_index(
            3,
            Value::Int(-4),
            Err("Bracket index -4 out of bounds for array of size 3"),
        );
        check_index(
            0,
            Value::Int(0),
            Err("Bracket index 0 out of bounds for array of size 0"),
        );
        check_index(
            3,
            Value::Int(i64::MIN),
            Err(&format!(
                "Bracket index {} out of bounds for array of size 3",
                i64::MIN
            )),
        );
        check_index(3, bound(None), Err("Bracket index cannot be Null"));
        check_index(
            3,
            Value::BigInt(BigInt { limbs: vec![0, 1] }),
            Err("Bracket bound: BigInt with more than 1 limb does not fit in i64"),
        );
        check_index(
            3,
            Value::Str(b"1".to_vec()),
            Err("expected an integer, got Str"),
        );
    }

    #[test]
    fn arity_and_terminals() {
        let chain = Pattern::Key(vec![
            (
                "a".into(),
                Pattern::BracketIndex(Some(Box::new(Pattern::End))),
            ),
            ("b".into(), Pattern::BracketSlice),
            (
                "c".into(),
                Pattern::Idx(vec![(0, Pattern::End), (1, Pattern::End)]),
            ),
        ]);
        assert_eq!(arity(&chain), 4);
        assert_eq!(terminals(&chain), 4);
        assert_eq!(arity(&Pattern::BracketIndex(None)), 1);
        assert_eq!(terminals(&Pattern::BracketIndex(None)), 0);
    }
}
