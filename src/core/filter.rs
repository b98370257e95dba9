//! `--where`: a small condition language over a record's fields, evaluated on the raw JSON
//! text of each field the scanner located (no second parse of the record).
//!
//! ```text
//! or      := and ("or" and)*
//! and     := unary ("and" unary)*
//! unary   := "not" unary | "(" or ")" | test
//! test    := PATH OP LITERAL | PATH "in" "[" LITERAL ("," LITERAL)* "]" | PATH "=~" STRING
//!          | exists(PATH) | missing(PATH) | startswith(PATH, STRING) | contains(PATH, STRING)
//!          | time(PATH) OP STRING
//! OP      := "==" | "!=" | "<" | "<=" | ">" | ">="
//! LITERAL := a JSON string, number, true, false or null
//! ```
//!
//! Numbers compare as exact decimals whatever their spelling; strings by their text once
//! unescaped; values of different kinds are unequal and unordered. A test of a missing field
//! is false (`!=` too); `not` turns it true.

use std::borrow::Cow;
use std::cmp::Ordering;

use regex::Regex;
use smallvec::SmallVec;

use super::record::{time_of, FieldPath};
use super::time::{parse_instant, Millis, TimeFormat};

/// A condition, parsed; its field paths are numbered in the order `paths` gives them.
#[derive(Debug)]
pub struct Filter {
    expr: Expr,
    paths: Vec<FieldPath>,
    time_format: TimeFormat,
}

#[derive(Debug)]
enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Compare(usize, Op, Literal),
    In(usize, Vec<Literal>),
    Exists(usize),
    Missing(usize),
    StartsWith(usize, String),
    Contains(usize, String),
    Matches(usize, Regex),
    Time(usize, Op, Millis),
    /// `num(PATH) OP NUMBER`: the field as the aggregates read it, a number or a string
    /// holding one.
    Num(usize, Op, Decimal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, order: Ordering) -> bool {
        match self {
            Op::Eq => order == Ordering::Equal,
            Op::Ne => order != Ordering::Equal,
            Op::Lt => order == Ordering::Less,
            Op::Le => order != Ordering::Greater,
            Op::Gt => order == Ordering::Greater,
            Op::Ge => order != Ordering::Less,
        }
    }

    fn orders(self) -> bool {
        !matches!(self, Op::Eq | Op::Ne)
    }
}

#[derive(Clone, Debug)]
enum Literal {
    Str(String),
    Num(Decimal),
    Bool(bool),
    Null,
}

/// Why a condition does not parse: where (a 1-based column of the text) and what was
/// expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl Filter {
    /// The conditions of every `--where`, all of which must hold; `time(...)` reads fields
    /// as `time_format` says.
    pub fn parse_all(
        texts: &[String],
        time_format: &TimeFormat,
    ) -> Result<Filter, (usize, FilterError)> {
        let mut paths = Vec::new();
        let mut all = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let mut parser = Parser::new(text, &mut paths);
            all.push(parser.whole().map_err(|e| (i, e))?);
        }
        let expr = match all.len() {
            1 => all.pop().expect("one"),
            _ => Expr::And(all),
        };
        Ok(Filter {
            expr,
            paths,
            time_format: time_format.clone(),
        })
    }

    /// The fields the condition reads, in the order `holds` numbers them.
    pub fn paths(&self) -> &[FieldPath] {
        &self.paths
    }

    /// Whether the condition holds for a record whose field `i` has the raw JSON text
    /// `field(i)`, or is missing (`None`).
    pub fn holds<'a>(&self, field: &impl Fn(usize) -> Option<&'a str>) -> bool {
        self.eval(&self.expr, field)
    }

    fn eval<'a>(&self, e: &Expr, field: &impl Fn(usize) -> Option<&'a str>) -> bool {
        match e {
            Expr::Or(all) => all.iter().any(|e| self.eval(e, field)),
            Expr::And(all) => all.iter().all(|e| self.eval(e, field)),
            Expr::Not(e) => !self.eval(e, field),
            Expr::Exists(i) => field(*i).is_some(),
            Expr::Missing(i) => field(*i).is_none(),
            Expr::Compare(i, op, lit) => field(*i).is_some_and(|raw| compare(raw, *op, lit)),
            Expr::In(i, lits) => {
                field(*i).is_some_and(|raw| lits.iter().any(|l| compare(raw, Op::Eq, l)))
            }
            Expr::StartsWith(i, s) => text_of(field(*i)).is_some_and(|t| t.starts_with(s.as_str())),
            Expr::Contains(i, s) => text_of(field(*i)).is_some_and(|t| t.contains(s.as_str())),
            Expr::Matches(i, re) => text_of(field(*i)).is_some_and(|t| re.is_match(&t)),
            Expr::Time(i, op, at) => field(*i)
                .and_then(|raw| time_of(raw, &self.paths[*i], &self.time_format).ok())
                .is_some_and(|t| op.holds(t.cmp(at))),
            Expr::Num(i, op, n) => field(*i)
                .and_then(numeric)
                .is_some_and(|d| op.holds(d.cmp(n))),
        }
    }
}

/// The text of a field that is a JSON string, unescaped.
fn text_of(raw: Option<&str>) -> Option<Cow<'_, str>> {
    let inner = raw?.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(raw?).ok().map(Cow::Owned)
}

/// A field's raw JSON against a literal: values of different kinds are unequal and
/// unordered.
/// A field's number as the aggregates take it: a JSON number, or a string holding one.
fn numeric(raw: &str) -> Option<Decimal> {
    match raw.as_bytes().first() {
        Some(b'"') => Decimal::parse(&text_of(Some(raw))?),
        _ => Decimal::parse(raw),
    }
}

fn compare(raw: &str, op: Op, lit: &Literal) -> bool {
    let order = match (raw.as_bytes().first(), lit) {
        (Some(b'"'), Literal::Str(s)) => text_of(Some(raw)).map(|t| t.as_ref().cmp(s.as_str())),
        (Some(b'-' | b'0'..=b'9'), Literal::Num(n)) => Decimal::parse(raw).map(|d| d.cmp(n)),
        (Some(b't'), Literal::Bool(b)) if !op.orders() => Some(true.cmp(b)),
        (Some(b'f'), Literal::Bool(b)) if !op.orders() => Some(false.cmp(b)),
        (Some(b'n'), Literal::Null) if !op.orders() => Some(Ordering::Equal),
        _ => None,
    };
    match order {
        Some(order) => op.holds(order),
        // Different kinds: unequal, so only != holds.
        None => op == Op::Ne,
    }
}

/// A decimal number, exactly: `0.DIGITS x 10^exponent`, digits without leading or trailing
/// zeros (none for zero, whatever its sign).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    digits: SmallVec<[u8; 24]>,
    exponent: i64,
}

impl Decimal {
    /// A JSON number's text; `None` for what is not one.
    pub fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], rest[at + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !all_digits(int) || !all_digits(frac) || mantissa.ends_with('.') {
            return None;
        }
        let mut digits: SmallVec<[u8; 24]> = int.bytes().chain(frac.bytes()).collect();
        let mut exponent = exp.saturating_add(int.len() as i64);
        let leading = digits.iter().take_while(|&&d| d == b'0').count();
        digits.drain(..leading);
        exponent = exponent.saturating_sub(leading as i64);
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }

    fn magnitude_cmp(&self, other: &Decimal) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        self.exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.as_slice().cmp(other.digits.as_slice()))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.magnitude_cmp(other),
            (true, true) => other.magnitude_cmp(self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A token and the 1-based column it starts at.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Num(String),
    Op(&'static str),
    Open,
    Close,
    OpenList,
    CloseList,
    Comma,
    End,
}

struct Parser<'t, 'p> {
    text: &'t str,
    at: usize,
    paths: &'p mut Vec<FieldPath>,
}

impl<'t, 'p> Parser<'t, 'p> {
    fn new(text: &'t str, paths: &'p mut Vec<FieldPath>) -> Parser<'t, 'p> {
        Parser { text, at: 0, paths }
    }

    fn error<T>(&self, column: usize, message: impl Into<String>) -> Result<T, FilterError> {
        Err(FilterError {
            column,
            message: message.into(),
        })
    }

    /// The next token and its column, without taking it.
    fn peek(&self) -> Result<(Token, usize, usize), FilterError> {
        let rest = &self.text[self.at..];
        let skipped = rest.len() - rest.trim_start().len();
        let start = self.at + skipped;
        let column = self.text[..start].chars().count() + 1;
        let rest = &self.text[start..];
        let (token, len) = match rest.chars().next() {
            None => (Token::End, 0),
            Some('(') => (Token::Open, 1),
            Some(')') => (Token::Close, 1),
            Some('[') => (Token::OpenList, 1),
            Some(']') => (Token::CloseList, 1),
            Some(',') => (Token::Comma, 1),
            Some('"') => self.string(rest, column)?,
            Some(c) if c == '-' || c.is_ascii_digit() => number(rest),
            Some('=' | '!' | '<' | '>') => self.operator(rest, column)?,
            Some(_) => word(rest),
        };
        Ok((token, column, start + len))
    }

    fn next(&mut self) -> Result<(Token, usize), FilterError> {
        let (token, column, end) = self.peek()?;
        self.at = end;
        Ok((token, column))
    }

    fn string(&self, rest: &str, column: usize) -> Result<(Token, usize), FilterError> {
        let mut escaped = false;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    let raw = &rest[..i + 1];
                    return match serde_json::from_str::<String>(raw) {
                        Ok(s) => Ok((Token::Str(s), i + 1)),
                        Err(e) => self.error(column, format!("a JSON string: {e}")),
                    };
                }
                _ => escaped = false,
            }
        }
        self.error(column, "a closing \" for this string")
    }

    fn operator(&self, rest: &str, column: usize) -> Result<(Token, usize), FilterError> {
        for op in ["==", "!=", "<=", ">=", "=~", "<", ">"] {
            if rest.starts_with(op) {
                return Ok((Token::Op(op), op.len()));
            }
        }
        // SQL's and the shell's single `=`, `<>`: the likely operator.
        let meant = match () {
            _ if rest.starts_with("<>") => " (did you mean '!='?)",
            _ if rest.starts_with('=') => " (did you mean '=='?)",
            _ => "",
        };
        self.error(column, format!("an operator: == != < <= > >= =~{meant}"))
    }

    /// One condition, the whole text.
    fn whole(&mut self) -> Result<Expr, FilterError> {
        let expr = self.or()?;
        match self.next()? {
            (Token::End, _) => Ok(expr),
            (t, column) => self.error(column, format!("'and', 'or' or the end, not {}", shown(&t))),
        }
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        self.chain("or", Self::and, Expr::Or)
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        self.chain("and", Self::unary, Expr::And)
    }

    /// `operand (word operand)*`, joined by `join` when there are several.
    fn chain(
        &mut self,
        word: &str,
        operand: fn(&mut Self) -> Result<Expr, FilterError>,
        join: fn(Vec<Expr>) -> Expr,
    ) -> Result<Expr, FilterError> {
        let mut all = vec![operand(self)?];
        while matches!(self.peek()?.0, Token::Word(w) if w == word) {
            self.next()?;
            all.push(operand(self)?);
        }
        Ok(match all.len() {
            1 => all.pop().expect("one"),
            _ => join(all),
        })
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        let (token, column) = self.next()?;
        match token {
            Token::Word(w) if w == "not" => Ok(Expr::Not(Box::new(self.unary()?))),
            Token::Open => {
                let inner = self.or()?;
                self.expect(Token::Close, "')'")?;
                Ok(inner)
            }
            Token::Word(w) if self.peek()?.0 == Token::Open && is_function(&w) => self.function(&w),
            Token::Word(w) => {
                let i = self.path(&w, column)?;
                self.test(i)
            }
            t => self.error(
                column,
                format!("a field, 'not', '(' or a function, not {}", shown(&t)),
            ),
        }
    }

    fn expect(&mut self, want: Token, what: &str) -> Result<(), FilterError> {
        match self.next()? {
            (t, _) if t == want => Ok(()),
            (t, column) => self.error(column, format!("{what}, not {}", shown(&t))),
        }
    }

    /// The number of the field `text` names, added if new.
    fn path(&mut self, text: &str, column: usize) -> Result<usize, FilterError> {
        let path = FieldPath::parse(text).or_else(|e| self.error(column, e))?;
        if let Some(i) = self.paths.iter().position(|p| p.as_str() == path.as_str()) {
            return Ok(i);
        }
        self.paths.push(path);
        Ok(self.paths.len() - 1)
    }

    /// What follows a field: a comparison, `in [...]` or `=~ "re"`.
    fn test(&mut self, i: usize) -> Result<Expr, FilterError> {
        match self.next()? {
            (Token::Op("=~"), _) => {
                let (pattern, column) = self.string_literal()?;
                let re = Regex::new(&pattern)
                    .or_else(|e| self.error(column, format!("a regular expression: {e}")))?;
                Ok(Expr::Matches(i, re))
            }
            (Token::Op(op), _) => {
                let op = parse_op(op);
                let (lit, column) = self.literal()?;
                if op.orders() && matches!(lit, Literal::Bool(_) | Literal::Null) {
                    return self.error(column, "a number or a string: only they are ordered");
                }
                Ok(Expr::Compare(i, op, lit))
            }
            (Token::Word(w), _) if w == "in" => Ok(Expr::In(i, self.list()?)),
            (t, column) => self.error(
                column,
                format!(
                    "a comparison (== != < <= > >=), 'in' or '=~' after the field, not {}",
                    shown(&t)
                ),
            ),
        }
    }

    fn list(&mut self) -> Result<Vec<Literal>, FilterError> {
        self.expect(Token::OpenList, "'['")?;
        let mut all = vec![self.literal()?.0];
        loop {
            match self.next()? {
                (Token::Comma, _) => all.push(self.literal()?.0),
                (Token::CloseList, _) => return Ok(all),
                (t, column) => return self.error(column, format!("',' or ']', not {}", shown(&t))),
            }
        }
    }

    fn literal(&mut self) -> Result<(Literal, usize), FilterError> {
        let (token, column) = self.next()?;
        let lit = match token {
            Token::Str(s) => Literal::Str(s),
            Token::Num(n) => match Decimal::parse(&n) {
                Some(d) => Literal::Num(d),
                None => return self.error(column, format!("a JSON number, not '{n}'")),
            },
            Token::Word(w) if w == "true" => Literal::Bool(true),
            Token::Word(w) if w == "false" => Literal::Bool(false),
            Token::Word(w) if w == "null" => Literal::Null,
            t => {
                return self.error(
                    column,
                    format!(
                        "a JSON string, number, true, false or null, not {}",
                        shown(&t)
                    ),
                )
            }
        };
        Ok((lit, column))
    }

    fn string_literal(&mut self) -> Result<(String, usize), FilterError> {
        match self.next()? {
            (Token::Str(s), column) => Ok((s, column)),
            (t, column) => self.error(column, format!("a JSON string, not {}", shown(&t))),
        }
    }

    fn function(&mut self, name: &str) -> Result<Expr, FilterError> {
        self.expect(Token::Open, "'('")?;
        let (field, at) = match self.next()? {
            (Token::Word(w), at) => (w, at),
            (t, at) => return self.error(at, format!("a field, not {}", shown(&t))),
        };
        let i = self.path(&field, at)?;
        let expr = match name {
            "exists" => Expr::Exists(i),
            "missing" => Expr::Missing(i),
            _ if name == "time" => {
                self.expect(Token::Close, "')'")?;
                return self.time(i);
            }
            _ if name == "num" => {
                self.expect(Token::Close, "')'")?;
                return self.num(i);
            }
            _ => {
                self.expect(Token::Comma, "','")?;
                let (s, _) = self.string_literal()?;
                match name {
                    "startswith" => Expr::StartsWith(i, s),
                    _ => Expr::Contains(i, s),
                }
            }
        };
        self.expect(Token::Close, "')'")?;
        Ok(expr)
    }

    /// `num(PATH)` then a comparison with a number.
    fn num(&mut self, i: usize) -> Result<Expr, FilterError> {
        let op = match self.next()? {
            (Token::Op(op), _) if op != "=~" => parse_op(op),
            (t, column) => {
                return self.error(
                    column,
                    format!("a comparison after num(...), not {}", shown(&t)),
                )
            }
        };
        match self.next()? {
            (Token::Num(text), column) => match Decimal::parse(&text) {
                Some(n) => Ok(Expr::Num(i, op, n)),
                None => self.error(column, format!("a JSON number, not {text}")),
            },
            (t, column) => self.error(column, format!("a number, not {}", shown(&t))),
        }
    }

    /// `time(PATH)` then a comparison with an instant.
    fn time(&mut self, i: usize) -> Result<Expr, FilterError> {
        let op = match self.next()? {
            (Token::Op(op), _) if op != "=~" => parse_op(op),
            (t, column) => {
                return self.error(
                    column,
                    format!("a comparison after time(...), not {}", shown(&t)),
                )
            }
        };
        let (text, column) = self.string_literal()?;
        match parse_instant(&text) {
            Some(Ok(at)) => Ok(Expr::Time(i, op, at)),
            Some(Err(e)) => self.error(column, format!("a time within range ({e})")),
            None => self.error(
                column,
                format!("an RFC 3339 instant such as \"2026-11-28T12:00:00Z\", or a date and time read as UTC (\"2026-11-28 12:10\"), not \"{text}\""),
            ),
        }
    }
}

fn is_function(word: &str) -> bool {
    matches!(
        word,
        "exists" | "missing" | "startswith" | "contains" | "time" | "num"
    )
}

fn parse_op(op: &str) -> Op {
    match op {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        _ => Op::Ge,
    }
}

/// A number's text, as far as JSON's number characters go.
fn number(rest: &str) -> (Token, usize) {
    let len = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
        .unwrap_or(rest.len());
    (Token::Num(rest[..len].to_string()), len)
}

/// A word: a field path (with `\.` for a literal dot) or a keyword.
fn word(rest: &str) -> (Token, usize) {
    let mut end = rest.len();
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c.is_whitespace() || "()[],\"=!<>".contains(c) {
            end = i;
            break;
        }
    }
    (Token::Word(rest[..end].to_string()), end)
}

fn shown(t: &Token) -> String {
    match t {
        Token::Word(w) => format!("'{w}'"),
        Token::Str(s) => format!("the string {s:?}"),
        Token::Num(n) => format!("the number {n}"),
        Token::Op(op) => format!("'{op}'"),
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::OpenList => "'['".into(),
        Token::CloseList => "']'".into(),
        Token::Comma => "','".into(),
        Token::End => "the end".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn filter(text: &str) -> Filter {
        Filter::parse_all(&[text.to_string()], &TimeFormat::Auto).unwrap()
    }

    /// `record` is a JSON object; its top-level and one nested level of fields, by path.
    fn holds(text: &str, record: &str) -> bool {
        let f = filter(text);
        let value: serde_json::Value = serde_json::from_str(record).unwrap();
        let raws: Vec<Option<String>> = f
            .paths()
            .iter()
            .map(|p| {
                let mut v = &value;
                for s in p.segments() {
                    v = v.get(s)?;
                }
                Some(v.to_string())
            })
            .collect();
        f.holds(&|i| raws[i].as_deref())
    }

    #[test]
    fn numbers_compare_as_exact_decimals_whatever_their_spelling() {
        let same = ["12.5", "12.50", "1.25e1", "125e-1", "0.125E+2"];
        for a in same {
            for b in same {
                assert_eq!(Decimal::parse(a), Decimal::parse(b), "{a} {b}");
            }
        }
        assert_eq!(Decimal::parse("-0"), Decimal::parse("0"));
        assert_eq!(Decimal::parse("0.000"), Decimal::parse("0e10"));
        let ordered = [
            "-1e400",
            "-12.5",
            "-0.05",
            "0",
            "0.05",
            "0.1",
            "12.4999999999999999999",
            "12.5",
            "1e400",
        ];
        for w in ordered.windows(2) {
            assert!(
                Decimal::parse(w[0]) < Decimal::parse(w[1]),
                "{} < {}",
                w[0],
                w[1]
            );
        }
        for bad in ["", "-", "1.", ".5", "1e", "1.2.3", "0x10"] {
            assert_eq!(Decimal::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_operator_on_a_record() {
        let r = r#"{"status":"failed","amount":12.50,"n":null,"ok":true,"tags":["a"],"v":{"s":"caf\u00e9 \"x\""}}"#;
        for (text, want) in [
            (r#"status == "failed""#, true),
            (r#"status != "failed""#, false),
            ("amount == 12.5", true),
            ("amount >= 1.25e1", true),
            ("amount < 12.5", false),
            (r#"amount == "12.5""#, false),
            (r#"amount != "12.5""#, true),
            (r#"status > "a""#, true),
            ("n == null", true),
            ("ok == true and not (ok != true)", true),
            ("tags == null", false),
            ("tags != null", true),
            ("nope != 1", false),
            ("not nope == 1", true),
            ("exists(n) and missing(nope)", true),
            (r#"status in ["ok", "failed"]"#, true),
            ("amount in [1, 12.500]", true),
            (
                r#"startswith(status, "fail") and contains(v.s, "é \"x")"#,
                true,
            ),
            (r#"status =~ "^f.i""#, true),
            (r#"v.s =~ "^café""#, true),
            (r#"status == "ok" or amount > 10 and ok == true"#, true),
            (r#"(status == "ok" or amount > 10) and ok == false"#, false),
        ] {
            assert_eq!(holds(text, r), want, "{text}");
        }
    }

    /// `num(PATH)` reads a field as the aggregates do: a number, or a string holding one
    /// exactly ("12.50" is 12.5); anything else is no number, and the test is false.
    #[test]
    fn num_reads_numeric_strings_as_the_aggregates_do() {
        let r = r#"{"s":"12.50","n":9,"neg":"-6","text":"x","pad":" 11 ","b":true}"#;
        for (text, want) in [
            ("num(s) > 10", true),
            ("num(s) == 12.5", true),
            ("s > 10", false),
            ("num(n) < 10", true),
            ("num(neg) < -5", true),
            ("num(text) > 0", false),
            ("num(text) != 0", false),
            ("num(pad) > 0", false),
            ("num(b) > 0", false),
            ("num(missing) > 0", false),
        ] {
            assert_eq!(holds(text, r), want, "{text}");
        }
    }

    #[test]
    fn time_compares_instants_whatever_their_offset() {
        let r = r#"{"ts":"2026-11-28T13:30:00+01:00","ms":1764333000000,"bad":"soon"}"#;
        assert!(holds(r#"time(ts) == "2026-11-28T12:30:00Z""#, r));
        assert!(holds(r#"time(ts) >= "2026-11-28T13:00:00+00:30""#, r));
        assert!(holds(r#"time(ms) == "2025-11-28T12:30:00Z""#, r));
        assert!(!holds(r#"time(bad) < "2026-11-28T12:30:00Z""#, r));
        assert!(holds(r#"not time(bad) < "2026-11-28T12:30:00Z""#, r));
    }

    /// Malformed conditions: the column and what was expected there.
    #[test]
    fn a_malformed_condition_names_its_column() {
        for (text, column, expected) in [
            ("", 1, "a field, 'not', '(' or a function"),
            ("status", 7, "a comparison"),
            (
                "status ==",
                10,
                "a JSON string, number, true, false or null",
            ),
            (r#"status == "failed"#, 11, "a closing \""),
            (
                r#"status = "x""#,
                8,
                "an operator: == != < <= > >= =~ (did you mean '=='?)",
            ),
            ("(a == 1", 8, "')'"),
            ("a == 1 b == 2", 8, "'and', 'or' or the end"),
            ("a in [1, 2", 11, "',' or ']'"),
            ("a in 1", 6, "'['"),
            ("a < true", 5, "only they are ordered"),
            (r#"a =~ "(""#, 6, "a regular expression"),
            (r#"time(ts) > "soon""#, 12, "an RFC 3339 instant"),
            ("startswith(a, 1)", 15, "a JSON string"),
            ("a == 1.", 6, "a JSON number"),
            ("a.. == 1", 1, "invalid field path"),
            ("exists(a", 9, "')'"),
        ] {
            let e = Filter::parse_all(&[text.to_string()], &TimeFormat::Auto)
                .unwrap_err()
                .1;
            assert_eq!(e.column, column, "{text}: {e}");
            assert!(e.message.contains(expected), "{text}: {e}");
        }
    }

    /// A generated field value and how the record spells it.
    #[derive(Clone, Debug)]
    enum Value {
        Missing,
        Null,
        Bool(bool),
        /// `n x 10^-scale`, spelled as `text`.
        Num(i64, u32, String),
        Str(String),
        Object,
    }

    impl Value {
        fn raw(&self) -> Option<String> {
            Some(match self {
                Value::Missing => return None,
                Value::Null => "null".into(),
                Value::Bool(b) => b.to_string(),
                Value::Num(_, _, text) => text.clone(),
                Value::Str(s) => serde_json::to_string(s).unwrap(),
                Value::Object => r#"{"x":1}"#.into(),
            })
        }
    }

    /// The spellings of `n x 10^-scale`: plain, with trailing zeros, with an exponent.
    fn spell(n: i64, scale: u32, how: u8) -> String {
        let digits = n.unsigned_abs().to_string();
        let sign = if n < 0 { "-" } else { "" };
        match how % 3 {
            0 => format!("{sign}{digits}e-{scale}"),
            1 => {
                let padded = format!("{digits:0>width$}", width = scale as usize + 1);
                let (int, frac) = padded.split_at(padded.len() - scale as usize);
                match frac.is_empty() {
                    true => format!("{sign}{int}"),
                    false => format!("{sign}{int}.{frac}"),
                }
            }
            _ => format!("{sign}{digits}00E-{}", scale + 2),
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        let text = prop::sample::select(vec![
            "",
            "a",
            "ab",
            "b",
            "é",
            "a\"b",
            "a\\b",
            "日本",
            "\u{1F600}",
            "A",
        ]);
        prop_oneof![
            Just(Value::Missing),
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-30i64..30, 0u32..3, any::<u8>()).prop_map(|(n, s, how)| Value::Num(
                n,
                s,
                spell(n, s, how)
            )),
            text.prop_map(|s| Value::Str(s.to_string())),
            Just(Value::Object),
        ]
    }

    /// The same comparison, by hand: numbers as exact fractions, strings by their chars.
    fn oracle(v: &Value, op: Op, lit: &Value) -> bool {
        let order = match (v, lit) {
            (Value::Missing, _) => return false,
            (Value::Num(a, sa, _), Value::Num(b, sb, _)) => {
                let (a, b) = (*a as i128 * 10i128.pow(*sb), *b as i128 * 10i128.pow(*sa));
                Some(a.cmp(&b))
            }
            (Value::Str(a), Value::Str(b)) => Some(a.chars().cmp(b.chars())),
            (Value::Bool(a), Value::Bool(b)) if !op.orders() => Some(a.cmp(b)),
            (Value::Null, Value::Null) if !op.orders() => Some(Ordering::Equal),
            _ => None,
        };
        order.map_or(op == Op::Ne, |o| op.holds(o))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop::sample::select(vec![Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge])
    }

    fn op_text(op: Op) -> &'static str {
        match op {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    proptest! {
        /// Every comparison, `in`, `exists`, `missing`, `not`, `and` and `or`, against the
        /// oracle, over fields of every kind, nested or not, and numbers of every spelling.
        #[test]
        fn conditions_agree_with_an_independent_evaluator(
            fields in prop::collection::vec(value(), 2),
            lits in prop::collection::vec(value(), 3),
            ops in prop::collection::vec(op(), 2),
            shape in 0u8..6,
            same in prop::collection::vec(any::<bool>(), 2),
        ) {
            // Often the field's own value, spelled another way (`1.5` for `15e-1`).
            let mut lits: Vec<Value> = lits.into_iter().map(|l| match l {
                Value::Missing | Value::Object => Value::Null,
                l => l,
            }).collect();
            for k in 0..2 {
                match (&fields[k], same[k]) {
                    (Value::Num(n, s, text), true) => {
                        let how = text.len() as u8 + 1;
                        lits[k] = Value::Num(n * 10, s + 1, spell(n * 10, s + 1, how));
                    }
                    (Value::Str(_) | Value::Bool(_) | Value::Null, true) => lits[k] = fields[k].clone(),
                    _ => {}
                }
            }
            // Ordering a bool or null is refused when parsed: use == there.
            let ops: Vec<Op> = ops.iter().zip(&lits).map(|(o, l)| match l {
                Value::Bool(_) | Value::Null if o.orders() => Op::Eq,
                _ => *o,
            }).collect();
            let paths = ["a", "b.c"];
            let lit = |l: &Value| l.raw().unwrap();
            let cmp = |k: usize| format!("{} {} {}", paths[k], op_text(ops[k]), lit(&lits[k]));
            let want_cmp = |k: usize| oracle(&fields[k], ops[k], &lits[k]);
            let (text, want) = match shape {
                0 => (cmp(0), want_cmp(0)),
                1 => (format!("not {}", cmp(0)), !want_cmp(0)),
                2 => (format!("{} and {}", cmp(0), cmp(1)), want_cmp(0) && want_cmp(1)),
                3 => (format!("not ({} or {})", cmp(0), cmp(1)), !(want_cmp(0) || want_cmp(1))),
                4 => {
                    let list: Vec<String> = lits.iter().map(lit).collect();
                    let any = lits.iter().any(|l| oracle(&fields[1], Op::Eq, l));
                    (format!("b.c in [{}]", list.join(", ")), any)
                }
                _ => (
                    "exists(a) or missing(b.c)".to_string(),
                    !matches!(fields[0], Value::Missing) || matches!(fields[1], Value::Missing),
                ),
            };
            let f = filter(&text);
            let raws: Vec<Option<String>> = f.paths().iter().map(|p| {
                let k = paths.iter().position(|q| *q == p.as_str()).unwrap();
                fields[k].raw()
            }).collect();
            prop_assert_eq!(f.holds(&|i| raws[i].as_deref()), want, "{}", text);
        }
    }
}
