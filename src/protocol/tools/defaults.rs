//! The typed value of an omitted option or record field, from its manifest
//! default (a command-line string) and its schema.

use serde_json::{Number, Value};

use crate::format::schema::Schema;

/// The value an omitted option (or record field) takes, derived from its
/// manifest default `default` (a CLI string) and its schema.
///
/// Rules, after these two fixes: an optional type with default `null` gives
/// JSON null; an empty default on a list-typed option (`many`, or a list
/// schema) gives `[]`. Then, with one outer `?` peeled: absent or empty gives
/// null; Bool gives `true`/`false` or the text; integer types give an integer
/// (exact even beyond 64 bits), else a float (null if not finite), else the
/// text; float types give a float, else the text; Str strips one pair of
/// surrounding double quotes; everything else is the text parsed as JSON, or
/// the text itself.
pub fn typed_default(default: Option<&str>, schema: Option<&Schema>, many: bool) -> Value {
    let schema = schema.map(Schema::peel_named);
    let raw = default.unwrap_or("");
    if raw == "null" && matches!(schema, Some(Schema::Optional(_))) {
        return Value::Null;
    }
    if raw.is_empty() {
        if default.is_some() && (many || matches!(schema, Some(Schema::List { .. }))) {
            return Value::Array(Vec::new());
        }
        return Value::Null;
    }
    let text = || Value::String(raw.to_string());
    let effective = match schema {
        Some(Schema::Optional(inner)) => Some(inner.peel_named()),
        other => other,
    };
    match effective {
        Some(Schema::Bool) => match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => text(),
        },
        Some(Schema::Int { .. } | Schema::BigInt) => {
            if let Ok(n) = raw.parse::<i64>() {
                return Value::from(n);
            }
            if is_integer_literal(raw) {
                // Beyond 64 bits: keep every digit (arbitrary-precision numbers).
                if let Ok(n) = serde_json::from_str::<Number>(raw) {
                    return Value::Number(n);
                }
            }
            match raw.parse::<f64>() {
                Ok(f) => float(f),
                Err(_) => text(),
            }
        }
        Some(Schema::Float { .. }) => match raw.parse::<f64>() {
            Ok(f) => float(f),
            Err(_) => text(),
        },
        Some(Schema::Str) => {
            let stripped = raw.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
            match stripped {
                Some(inner) if raw.len() >= 2 => Value::String(inner.to_string()),
                _ => text(),
            }
        }
        _ => serde_json::from_str(raw).unwrap_or_else(|_| text()),
    }
}

/// `-?[0-9]+`: an integer JSON accepts as written (leading zeros aside,
/// which `i64` parsing has already absorbed for small values).
fn is_integer_literal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !(digits.len() > 1 && digits.starts_with('0'))
}

fn float(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema;

    fn check_default(default: Option<&str>, schema_text: Option<&str>, many: bool, expected: &str) {
        let parsed = schema_text.map(|s| schema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}")));
        let value = typed_default(default, parsed.as_ref(), many);
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            expected,
            "default {default:?} for {schema_text:?}"
        );
    }

    #[test]
    fn typed_defaults() {
        // Absent or empty.
        check_default(None, Some("j"), false, "null");
        check_default(Some(""), Some("j"), false, "null");
        check_default(Some(""), Some("s"), false, "null");
        check_default(Some(""), None, false, "null");
        // Reference gap 3.8: empty list defaults are empty lists.
        check_default(Some(""), Some("as"), false, "[]");
        check_default(Some(""), Some("<list>as"), false, "[]");
        check_default(Some(""), Some("s"), true, "[]");
        check_default(Some(""), Some("?as"), false, "null");
        check_default(None, Some("as"), false, "null");
        // Reference gap 3.8: `null` on an optional type is JSON null.
        check_default(Some("null"), Some("?j"), false, "null");
        check_default(Some("null"), Some("?s"), false, "null");
        check_default(Some("null"), Some("j"), false, r#""null""#);
        check_default(Some("null"), Some("s"), false, r#""null""#);
        // Bool.
        check_default(Some("true"), Some("b"), false, "true");
        check_default(Some("false"), Some("?b"), false, "false");
        check_default(Some("yes"), Some("b"), false, r#""yes""#);
        // Integers.
        check_default(Some("2"), Some("j"), false, "2");
        check_default(Some("-7"), Some("i4"), false, "-7");
        check_default(Some("+7"), Some("u1"), false, "7");
        check_default(Some("2.5"), Some("j"), false, "2.5");
        check_default(Some("1e3"), Some("i8"), false, "1000.0");
        check_default(
            Some("123456789012345678901234567890"),
            Some("j"),
            false,
            "123456789012345678901234567890",
        );
        check_default(
            Some("18446744073709551615"),
            Some("u8"),
            false,
            "18446744073709551615",
        );
        check_default(Some("inf"), Some("j"), false, "null");
        check_default(Some("NaN"), Some("j"), false, "null");
        check_default(Some("ten"), Some("j"), false, r#""ten""#);
        check_default(Some("5"), Some("?j"), false, "5");
        // Floats.
        check_default(Some("6371.0"), Some("f8"), false, "6371.0");
        check_default(Some("2"), Some("f4"), false, "2.0");
        check_default(Some("0.1"), Some("f8"), false, "0.1");
        check_default(Some("-inf"), Some("f8"), false, "null");
        check_default(Some("x"), Some("f8"), false, r#""x""#);
        // Strings: one pair of quotes stripped, no unescaping.
        check_default(Some("\"/tmp\""), Some("s"), false, r#""/tmp""#);
        check_default(Some("\"\""), Some("s"), false, r#""""#);
        check_default(Some("\""), Some("s"), false, r#""\"""#);
        check_default(Some("\"a\\nb\""), Some("s"), false, r#""a\\nb""#);
        check_default(Some("plain"), Some("?s"), false, r#""plain""#);
        check_default(Some("\"\"x\"\""), Some("s"), false, r#""\"x\"""#);
        // Everything else: JSON if it parses, else the text.
        check_default(Some("[1,2]"), Some("aj"), false, "[1,2]");
        check_default(Some("[1, 2"), Some("aj"), false, r#""[1, 2""#);
        check_default(Some("{\"a\":1}"), Some("m11aj"), false, r#"{"a":1}"#);
        check_default(Some("[1,\"a\"]"), Some("t2js"), false, r#"[1,"a"]"#);
        check_default(Some("null"), Some("z"), false, "null");
        check_default(Some("5"), None, false, "5");
        check_default(Some("abc"), None, false, r#""abc""#);
        check_default(Some("7"), Some("&1Xj"), false, "7");
    }
}
