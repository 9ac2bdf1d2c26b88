//! Tests of paging: pages of every kind reassemble the value, previews are
//! valid JSON cut at value boundaries.

use super::*;

fn list_text(n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| format!("{{\"a\":[{i},\"x,]\\\"\"]}}"))
        .collect();
    format!("[{}]", items.join(","))
}

#[test]
fn list_pages_are_arrays_that_reassemble_the_list() {
    for n in [0, 1, 5, STRIDE - 1, STRIDE, STRIDE + 1, 3 * STRIDE + 7] {
        let text = list_text(n);
        let whole: serde_json::Value = serde_json::from_str(&text).unwrap();
        let paged = Paged::new(text.clone());
        assert_eq!(paged.kind(), Kind::List);
        assert_eq!(paged.count(), n);
        for limit in [1, 7, STRIDE, 5000] {
            let mut got = Vec::new();
            let mut offset = 0;
            while offset < n {
                let page: serde_json::Value = serde_json::from_str(&paged.page(offset, limit))
                    .unwrap_or_else(|e| panic!("page {offset}+{limit} of {n}: {e}"));
                let items = page.as_array().unwrap();
                assert_eq!(items.len(), limit.min(n - offset));
                got.extend(items.iter().cloned());
                offset += limit;
            }
            assert_eq!(serde_json::Value::Array(got), whole);
        }
        assert_eq!(paged.page(n + 10, 5), "[]");
        assert_eq!(paged.text(), text);
    }
}

#[test]
fn string_pages_are_characters_that_reassemble_the_string() {
    let body: String = (0..3 * STRIDE + 11)
        .map(|i| match i % 7 {
            0 => '"',
            1 => '\n',
            2 => 'é',
            3 => '😀',
            4 => '\\',
            5 => '\u{1}',
            _ => 'a',
        })
        .collect();
    let mut text = String::new();
    crate::format::json::write_str(&mut text, &body);
    // A surrogate pair and an escaped slash, as other writers send them.
    text.insert_str(1, "\\ud83d\\ude00\\/");
    let expected = format!("😀/{body}");
    let paged = Paged::new(text);
    assert_eq!(paged.kind(), Kind::Str);
    assert_eq!(paged.count(), expected.chars().count());
    for limit in [1, 13, STRIDE, 100_000] {
        let mut got = String::new();
        let mut offset = 0;
        while offset < paged.count() {
            got.push_str(&paged.page(offset, limit));
            offset += limit;
        }
        assert_eq!(got, expected, "limit {limit}");
    }
    assert_eq!(
        paged.page(2, 3),
        expected.chars().skip(2).take(3).collect::<String>()
    );
}

#[test]
fn other_values_page_by_characters_of_their_text() {
    let text = format!("{{\"k\":\"{}\",\"n\":1}}", "é".repeat(2 * STRIDE + 3));
    let paged = Paged::new(text.clone());
    assert_eq!(paged.kind(), Kind::Record);
    assert_eq!(paged.count(), text.chars().count());
    let mut got = String::new();
    let mut offset = 0;
    while offset < paged.count() {
        got.push_str(&paged.page(offset, 333));
        offset += 333;
    }
    assert_eq!(got, text);
    let number = Paged::new("12345678901234567890".into());
    assert_eq!(number.kind(), Kind::Other);
    assert_eq!(number.page(5, 3), "678");
    assert_eq!(number.page(19, 3), "0");
}

#[test]
fn previews_are_valid_json_cut_at_value_boundaries() {
    let text = list_text(100);
    let paged = Paged::new(text.clone());
    assert!(paged.preview(text.len()).is_none());
    for budget in [2, 10, 30, 100, 500] {
        let (preview, shown) = paged.preview(budget).unwrap();
        assert!(preview.len() <= budget, "{preview}");
        let parsed: serde_json::Value = serde_json::from_str(&preview).unwrap();
        let items = parsed.as_array().unwrap();
        assert!(items.len() >= shown);
        // Every element shown in full is the list's own.
        let whole: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(items[..shown], whole.as_array().unwrap()[..shown]);
    }
    assert_eq!(
        Paged::new("[[1,2,3],[4,5,6,7,8,9]]".into()).preview(16),
        Some(("[[1,2,3],[4,5]]".to_string(), 1))
    );
    let record = Paged::new("{\"a\":1,\"b\":\"long long\"}".into());
    assert_eq!(record.preview(12), Some(("{\"a\":1}".to_string(), 0)));
    // A string value is cut between characters, never inside an escape.
    let record = Paged::new(format!("{{\"id\":7,\"seq\":\"{}\"}}", "ACGT".repeat(100)));
    let (preview, _) = record.preview(30).unwrap();
    assert_eq!(preview, "{\"id\":7,\"seq\":\"ACGTACGTACGTA\"}");
    let escapes = Paged::new(format!("[\"\\u00e9\\n{}\",1]", "é".repeat(50)));
    for budget in 2..40 {
        let (preview, shown) = escapes.preview(budget).unwrap();
        assert!(preview.len() <= budget, "{preview}");
        let parsed: serde_json::Value =
            serde_json::from_str(&preview).unwrap_or_else(|e| panic!("{budget}: {preview}: {e}"));
        assert!(parsed.as_array().is_some());
        assert_eq!(shown, 0);
    }
    let keys = Paged::new(format!("{{\"{}\":1}}", "k".repeat(50)));
    assert_eq!(keys.preview(20), Some(("{}".to_string(), 0)));
    let string = Paged::new("\"ab\\ncd\"".into());
    assert_eq!(string.preview(6), Some(("\"ab\\n\"".to_string(), 3)));
    assert_eq!(string.preview(5), Some(("\"ab\"".to_string(), 2)));
}

#[test]
fn odd_text_never_panics() {
    for text in [
        "",
        "[",
        "[1,",
        "\"abc",
        "\"\\u12",
        "{\"a\":[1,2",
        "[]",
        " [ ] ",
        "]",
    ] {
        let paged = Paged::new(text.to_string());
        for (o, l) in [(0, 1), (0, 100), (3, 2), (usize::MAX, usize::MAX)] {
            let _ = paged.page(o, l);
        }
        let _ = paged.preview(1);
        let _ = paged.preview(0);
    }
    assert_eq!(Paged::new(" [ ] ".into()).count(), 0);
    assert_eq!(Paged::new("[ 1 , 2 ]".into()).page(1, 1), "[2]");
}

/// Fuzz finding (`result_uri`): a backslash before a multi-byte character
/// made the string branch step into the middle of it, and cutting a preview
/// or page there panicked ("end byte index 5 is not a char boundary").
#[test]
fn a_backslash_before_a_multibyte_character_is_one_character() {
    let text = "\"ab\\\u{3da}\u{1a3}\u{2026}cd\"";
    let paged = Paged::new(text.to_string());
    assert_eq!(paged.kind(), Kind::Str);
    // `a`, `b`, the bad escape with its `Ϛ`, `ƣ`, `…`, `c`, `d`.
    assert_eq!(paged.count(), 7);
    assert_eq!(paged.page(0, 100), "ab\u{fffd}\u{1a3}\u{2026}cd");
    assert_eq!(paged.page(2, 1), "\u{fffd}");
    for budget in 0..text.len() + 2 {
        if let Some((preview, _)) = paged.preview(budget) {
            assert!(preview.ends_with('"'), "{preview:?}");
        }
    }
    // Every other kind of odd escape, before every width of character.
    for tail in ["\\\u{3da}", "\\x", "\\u12\u{3da}", "\\\u{10348}", "\\"] {
        let paged = Paged::new(format!("\"a{tail}b\""));
        for budget in 0..16 {
            let _ = paged.preview(budget);
            let _ = paged.page(budget, 3);
        }
    }
}

/// Pages found from the marks at both ends are the elements, characters
/// or text asked for; a body range escaped as the server escapes is
/// canonical, any other escape is not.
#[test]
fn pages_of_any_size_are_what_was_asked_and_canonical_bodies_are_recognised() {
    let items: Vec<&str> = ["1", "\"a,b\"", "[2, 3]"].repeat(3000);
    let list = Paged::new(format!("[ {} ]", items.join(" ,\n ")));
    let chars: Vec<char> = "ab\n\u{e9}\u{1f}☃".repeat(3000).chars().collect();
    let string = Paged::new(format!("\"{}\"", "ab\\n\\u00e9\\u001f☃".repeat(3000)));
    let record = Paged::new(format!("{{\"k\":\"{}\"}}", "é".repeat(5000)));
    let text: Vec<char> = record.text().chars().collect();
    let asked: [(usize, usize); 6] = [
        (0, 1),
        (0, usize::MAX),
        (1023, 3),
        (1024, 2049),
        (8999, 5),
        (9000, 1),
    ];
    for (offset, limit) in asked {
        let end = offset.saturating_add(limit);
        let listed = match offset < items.len() {
            true => format!("[{}]", items[offset..end.min(items.len())].join(" ,\n ")),
            false => "[]".to_string(),
        };
        assert_eq!(list.page(offset, limit), listed, "{offset}+{limit}");
        let cut = |all: &[char]| -> String {
            all[offset.min(all.len())..end.min(all.len())]
                .iter()
                .collect()
        };
        assert_eq!(string.page(offset, limit), cut(&chars), "{offset}+{limit}");
        assert_eq!(record.page(offset, limit), cut(&text), "{offset}+{limit}");
    }
    let canonical = Paged::new("\"a\\\"b\\\\c\\n\\u001f\\u0000é\"".into());
    assert!(canonical.canonical(1..canonical.bytes() - 1));
    for odd in [
        "\"\\u00e9\"",
        "\"\\/\"",
        "\"\\u000a\"",
        "\"\\u001F\"",
        "\"\u{1}\"",
    ] {
        let value = Paged::new(odd.into());
        assert!(!value.canonical(1..value.bytes() - 1), "{odd}");
    }
}
