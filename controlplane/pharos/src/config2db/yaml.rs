//! A YAML document that remembers where each mapping key sits (line, column).
//!
//! The migration reads a legacy file with it so that every error names its line and column,
//! and `--update-config` can delete a migrated key's lines from the original text instead of
//! re-emitting the whole document (which would drop comments, blank lines and layout).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A node with the position where it starts (1-based line and column).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Line of the node's first character.
    pub line: usize,
    /// Column of the node's first character.
    pub col: usize,
    /// What it holds.
    pub value: NodeValue,
}

/// The three YAML shapes.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    /// A mapping, in file order, each key with its own position.
    Map(Vec<(Key, Node)>),
    /// A sequence.
    Seq(Vec<Node>),
    /// A scalar's text; `plain` = unquoted (so `true`, `12` and `~` are typed).
    Scalar {
        /// The text.
        text: String,
        /// Unquoted.
        plain: bool,
    },
}

/// A mapping key and its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// Key text.
    pub name: String,
    /// Line of the key.
    pub line: usize,
    /// Column of the key.
    pub col: usize,
}

impl Node {
    /// The child `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, n)| n)
    }

    /// The child `key` of a mapping with the key's position.
    pub fn entry(&self, key: &str) -> Option<(&Key, &Node)> {
        match &self.value {
            NodeValue::Map(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| k.name == key)
                .map(|(k, n)| (k, n)),
            _ => None,
        }
    }

    /// The node at a dotted path.
    pub fn at(&self, path: &str) -> Option<&Node> {
        path.split('.').try_fold(self, |n, k| n.get(k))
    }

    /// Mapping entries (empty for other shapes).
    pub fn entries(&self) -> &[(Key, Node)] {
        match &self.value {
            NodeValue::Map(e) => e,
            _ => &[],
        }
    }

    /// A null scalar (`~`, `null`, or nothing).
    pub fn is_null(&self) -> bool {
        self.to_json() == Value::Null
    }

    /// `line L, column C`, for messages.
    pub fn pos(&self) -> String {
        format!("line {}, column {}", self.line, self.col)
    }

    /// The node as JSON, with YAML 1.2 core-schema typing of plain scalars.
    pub fn to_json(&self) -> Value {
        match &self.value {
            NodeValue::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.name.clone(), v.to_json());
                }
                Value::Object(m)
            }
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Scalar { text, plain: false } => Value::String(text.clone()),
            NodeValue::Scalar { text, plain: true } => plain_scalar(text),
        }
    }
}

fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return Value::Number(i.into());
    }
    let numeric = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        && text.chars().any(|c| c.is_ascii_digit());
    if numeric && let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

/// A syntax error with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What the parser found.
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.col, self.message
        )
    }
}

/// Parses the first document of `text`; an empty text is an empty mapping.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut b, false).map_err(|e| SyntaxError {
        line: e.marker().line(),
        col: e.marker().col() + 1,
        message: e.info().to_string(),
    })?;
    if let Some(e) = b.error {
        return Err(e);
    }
    Ok(b.root.unwrap_or(Node {
        line: 1,
        col: 1,
        value: NodeValue::Map(Vec::new()),
    }))
}

enum Frame {
    Map {
        start: Marker,
        anchor: usize,
        entries: Vec<(Key, Node)>,
        key: Option<Key>,
    },
    Seq {
        start: Marker,
        anchor: usize,
        items: Vec<Node>,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    error: Option<SyntaxError>,
}

fn node(m: Marker, value: NodeValue) -> Node {
    Node {
        line: m.line(),
        col: m.col() + 1,
        value,
    }
}

impl Builder {
    fn push(&mut self, n: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, n.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(n);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(n),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some(k) => entries.push((k, n)),
                None => match n.value {
                    NodeValue::Scalar { text, .. } => {
                        *key = Some(Key {
                            name: text,
                            line: n.line,
                            col: n.col,
                        })
                    }
                    _ => {
                        if self.error.is_none() {
                            self.error = Some(SyntaxError {
                                line: n.line,
                                col: n.col,
                                message: "a mapping key must be a scalar".into(),
                            });
                        }
                    }
                },
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(text, style, anchor, _) => {
                let plain = style == TScalarStyle::Plain;
                self.push(node(mark, NodeValue::Scalar { text, plain }), anchor);
            }
            Event::Alias(id) => {
                let n = self.anchors.get(&id).cloned().unwrap_or(Node {
                    line: mark.line(),
                    col: mark.col() + 1,
                    value: NodeValue::Scalar {
                        text: String::new(),
                        plain: true,
                    },
                });
                self.push(n, 0);
            }
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                start: mark,
                anchor,
                entries: Vec::new(),
                key: None,
            }),
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                start: mark,
                anchor,
                items: Vec::new(),
            }),
            Event::MappingEnd | Event::SequenceEnd => match self.stack.pop() {
                Some(Frame::Map {
                    start,
                    anchor,
                    entries,
                    ..
                }) => {
                    // A block mapping's start event points past its first key; the first key
                    // is where a reader looks for it.
                    let mut n = node(start, NodeValue::Map(Vec::new()));
                    if let Some((k, _)) = entries.first() {
                        (n.line, n.col) = (k.line, k.col);
                    }
                    n.value = NodeValue::Map(entries);
                    self.push(n, anchor)
                }
                Some(Frame::Seq {
                    start,
                    anchor,
                    items,
                }) => self.push(node(start, NodeValue::Seq(items)), anchor),
                None => {}
            },
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_keep_their_positions_and_scalars_their_types() {
        let doc = parse("# c\na:\n  b: 1\n  c: [x, 'true', true]\nd: ~\n").unwrap();
        let (k, _) = doc.entry("a").unwrap();
        assert_eq!((k.line, k.col), (2, 1));
        let (k, _) = doc.get("a").unwrap().entry("c").unwrap();
        assert_eq!((k.line, k.col), (4, 3));
        assert_eq!(
            doc.to_json(),
            json!({"a": {"b": 1, "c": ["x", "true", true]}, "d": null})
        );
    }

    #[test]
    fn a_syntax_error_names_line_and_column() {
        let e = parse("a:\n  b: 1\n c: [\n").unwrap_err();
        assert!(e.line >= 3, "{e}");
        assert!(e.to_string().starts_with("line "), "{e}");
    }

    #[test]
    fn empty_text_is_an_empty_mapping() {
        assert_eq!(parse("").unwrap().to_json(), json!({}));
    }
}
