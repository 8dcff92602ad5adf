//! Protobuf text format (what `config.pbtxt` is written in), parsed into an
//! untyped tree of fields; [`super`] gives the tree its meaning.
//!
//! The grammar handled: `name: value`, `name { ... }` / `name: { ... }` /
//! `name < ... >`, lists `name: [a, b]` (for scalars and messages), quoted
//! strings with C escapes (adjacent strings concatenate), numbers, enum
//! identifiers, `true`/`false`, `#` comments, and optional `,`/`;` separators.
//! No extensions (`[pkg.ext]` field names) or `Any` expansion: Triton's
//! configs do not use them, and they are reported as errors.

use std::fmt;

/// One scalar as written: a number, an identifier (enum value, bool) or a string.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A number, kept as written (`-1`, `0x10`, `1.5e3`).
    Number(String),
    /// An identifier (`TYPE_FP32`, `true`).
    Ident(String),
    /// A quoted string, escapes resolved.
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Number(s) | Scalar::Ident(s) => f.write_str(s),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A field's value: a scalar or a nested message.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `name: scalar`.
    Scalar(Scalar),
    /// `name { ... }`.
    Message(Message),
}

/// One field occurrence, with the line it starts on (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// Its value (a list `[a, b]` becomes one [`Field`] per element, as protobuf repeats).
    pub value: Value,
    /// 1-based line.
    pub line: usize,
}

/// A message: its fields in the order written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    /// Every field occurrence.
    pub fields: Vec<Field>,
}

/// A syntax error, with its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Number(String),
    Str(String),
    Punct(char),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) | Token::Number(s) => write!(f, "'{s}'"),
            Token::Str(s) => write!(f, "string {s:?}"),
            Token::Punct(c) => write!(f, "'{c}'"),
        }
    }
}

/// How deep messages may nest: bounds the recursion on hostile input.
const MAX_DEPTH: usize = 32;

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, SyntaxError> {
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    let err = |line, message: String| SyntaxError { line, message };
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '{' | '}' | '[' | ']' | '<' | '>' | ':' | ',' | ';' => {
                tokens.push((Token::Punct(c), line));
                chars.next();
            }
            '"' | '\'' => {
                let quote = c;
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None | Some('\n') => return Err(err(line, "unterminated string".into())),
                        Some(c) if c == quote => break,
                        Some('\\') => match chars.next() {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('r') => s.push('\r'),
                            Some(c @ ('\\' | '\'' | '"')) => s.push(c),
                            Some(c) => return Err(err(line, format!("unsupported escape '\\{c}' in a string"))),
                            None => return Err(err(line, "unterminated string".into())),
                        },
                        Some(c) => s.push(c),
                    }
                }
                // Adjacent strings concatenate, as in C and protobuf.
                if let Some((Token::Str(prev), _)) = tokens.last_mut() {
                    prev.push_str(&s);
                } else {
                    tokens.push((Token::Str(s), line));
                }
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_') {
                        s.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push((Token::Number(s), line));
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' {
                        s.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push((Token::Ident(s), line));
            }
            c => return Err(err(line, format!("unexpected character '{c}'"))),
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn line(&self) -> usize {
        self.tokens.get(self.pos).or(self.tokens.last()).map_or(1, |(_, l)| *l)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).map(|(t, _)| t.clone());
        self.pos += 1;
        t
    }

    fn error(&self, message: String) -> SyntaxError {
        SyntaxError { line: self.line(), message }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Fields up to `close` (or the end of input when `None`).
    fn fields(&mut self, close: Option<char>, depth: usize) -> Result<Message, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("messages nest deeper than {MAX_DEPTH} levels")));
        }
        let mut message = Message::default();
        loop {
            match (self.peek(), close) {
                (None, None) => return Ok(message),
                (None, Some(c)) => return Err(self.error(format!("missing '{c}' before the end of the file"))),
                (Some(Token::Punct(p)), Some(c)) if *p == c => {
                    self.pos += 1;
                    return Ok(message);
                }
                _ => {}
            }
            let line = self.line();
            let name = match self.next() {
                Some(Token::Ident(name)) => name,
                Some(t) => return Err(SyntaxError { line, message: format!("expected a field name, found {t}") }),
                None => unreachable!("checked above"),
            };
            let colon = self.eat(':');
            match self.peek() {
                Some(Token::Punct('{' | '<')) => {
                    let value = self.message(depth)?;
                    message.fields.push(Field { name, value: Value::Message(value), line });
                }
                // Triton's configs write message lists without the colon: `input [ { ... } ]`.
                Some(Token::Punct('[')) => {
                    self.pos += 1;
                    if !self.eat(']') {
                        loop {
                            let value = match self.peek() {
                                Some(Token::Punct('{' | '<')) => Value::Message(self.message(depth)?),
                                _ => Value::Scalar(self.scalar()?),
                            };
                            message.fields.push(Field { name: name.clone(), value, line });
                            if self.eat(']') {
                                break;
                            }
                            if !self.eat(',') {
                                return Err(self.error(format!("expected ',' or ']' in the list of '{name}'")));
                            }
                        }
                    }
                }
                _ if colon => {
                    let value = self.scalar()?;
                    message.fields.push(Field { name, value: Value::Scalar(value), line });
                }
                Some(t) => return Err(self.error(format!("expected ':' or '{{' after '{name}', found {t}"))),
                None => return Err(self.error(format!("'{name}' has no value"))),
            }
            // Separators between fields are optional.
            let _ = self.eat(',') || self.eat(';');
        }
    }

    fn message(&mut self, depth: usize) -> Result<Message, SyntaxError> {
        let close = match self.next() {
            Some(Token::Punct('{')) => '}',
            Some(Token::Punct('<')) => '>',
            _ => unreachable!("callers peeked an opening brace"),
        };
        self.fields(Some(close), depth + 1)
    }

    fn scalar(&mut self) -> Result<Scalar, SyntaxError> {
        match self.next() {
            Some(Token::Number(s)) => Ok(Scalar::Number(s)),
            Some(Token::Ident(s)) => Ok(Scalar::Ident(s)),
            Some(Token::Str(s)) => Ok(Scalar::Str(s)),
            Some(t) => {
                self.pos -= 1;
                Err(self.error(format!("expected a value, found {t}")))
            }
            None => Err(self.error("expected a value, found the end of the file".into())),
        }
    }
}

/// Parses a whole text-format message.
pub fn parse(text: &str) -> Result<Message, SyntaxError> {
    let mut parser = Parser { tokens: tokenize(text)?, pos: 0 };
    parser.fields(None, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_messages_lists_and_comments() {
        let m = parse(
            "name: \"m\" # comment\nmax_batch_size: 8\ninput [ { name: \"text\" dims: [ 1 ] }, { name: 'b' } ]\n\
             dynamic_batching < preferred_batch_size: [4, 8] >; version_policy: { all { } }",
        )
        .unwrap();
        let names: Vec<_> = m.fields.iter().map(|f| (f.name.as_str(), f.line)).collect();
        assert_eq!(names, [("name", 1), ("max_batch_size", 2), ("input", 3), ("input", 3), ("dynamic_batching", 4), ("version_policy", 4)]);
        let Value::Message(db) = &m.fields[4].value else { panic!("not a message") };
        assert_eq!(db.fields.len(), 2);
        assert_eq!(db.fields[1].value, Value::Scalar(Scalar::Number("8".into())));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("name: \"m\"\nmax_batch_size 8\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("max_batch_size"), "{e}");
        assert_eq!(parse("input {\n name: \"x\"\n").unwrap_err().message, "missing '}' before the end of the file");
        assert!(parse("name: \"abc").is_err());
        assert!(parse(&"a {".repeat(100)).unwrap_err().message.contains("nest deeper"));
    }

    #[test]
    fn adjacent_strings_concatenate_and_escapes_resolve() {
        let m = parse(r#"name: "a\"b" "c""#).unwrap();
        assert_eq!(m.fields[0].value, Value::Scalar(Scalar::Str("a\"bc".into())));
    }
}
