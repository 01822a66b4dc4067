//! Escaping for every sink fluxmend prints to. Names, paths and values come from repositories
//! fluxmend does not control; each sink has its own active characters, and each function here
//! makes a repository's text inert in one of them:
//!
//! * a terminal ([`terminal`], [`terminal_lines`]): control characters (escape sequences: OSC 52
//!   clipboard, window title, hyperlinks, colours) and bidirectional formatting characters;
//! * Markdown (pull-request body and commit message: [`md_code`], [`md_text`]): code-span
//!   fences, inline HTML, links, emphasis, block starts, mentions, issue references, autolinks;
//! * DOT and Mermaid labels ([`dot`], [`mermaid`]);
//! * paths in a diff ([`git_path`]), quoted as git quotes them so that `git apply` takes them.
//!
//! JSON and SARIF escape through their own encoder (serde); GitHub annotations through theirs
//! (`github.rs`), after [`terminal_lines`]: the runner shows them in the log and on the pull
//! request.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: a control character (C0, DEL, C1), a
/// bidirectional formatting character (which reorders what is shown around it), or a line or
/// paragraph separator (U+2028, U+2029: a line break to editors, browsers and JavaScript, where
/// it forges a line of the report).
fn unsafe_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `c` written visibly: `\x1b`, `\x9b`, `\u{202e}`.
fn visible(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let _ = match u32::from(c) {
        n @ 0..=0xff => write!(out, "\\x{n:02x}"),
        n => write!(out, "\\u{{{n:x}}}"),
    };
}

/// Text with every character `escape` selects written visibly.
fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One value (a line or a paragraph) for a terminal: every control character, line breaks
/// included, and every bidirectional formatting character written as a visible escape.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_where(s, unsafe_on_terminal)
}

/// A whole text of lines for a terminal (no styling of fluxmend's own in it): as [`terminal`],
/// but line feeds, tabs and the carriage return of a CRLF line end kept, which are its layout (a
/// lone carriage return, which would let a line overwrite what was shown, is escaped).
pub fn terminal_lines(s: &str) -> Cow<'_, str> {
    let layout =
        |c: char, next: Option<char>| c == '\n' || c == '\t' || (c == '\r' && next == Some('\n'));
    let mut chars = s.chars().peekable();
    let mut escapes = false;
    while let Some(c) = chars.next() {
        if unsafe_on_terminal(c) && !layout(c, chars.peek().copied()) {
            escapes = true;
            break;
        }
    }
    if !escapes {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if unsafe_on_terminal(c) && !layout(c, chars.peek().copied()) {
            visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A Markdown code span holding `s` literally: a fence longer than any run of backticks in
/// it, padded when `s` starts or ends with a backtick, and control characters escaped so the
/// span cannot end its block. Nothing in a code span is a link, HTML, mention or reference.
pub fn md_code(s: &str) -> String {
    let s = terminal(s);
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Markdown prose that may hold a repository's text: its `` `code` `` spans stay code spans
/// (re-fenced by [`md_code`], so a backtick inside cannot end one early), and everything else
/// is inert text: Markdown punctuation backslash-escaped (no HTML, link, image, emphasis,
/// table, heading or entity), a word that would start a list, quote or rule escaped, and
/// mentions (`@name`), references (`#12`) and autolinks (`https://`, `www.`) broken by a
/// zero-width space, which GitHub does not link across. Control characters are escaped.
pub fn md_text(s: &str) -> String {
    let s = terminal(s);
    let parts: Vec<&str> = s.split('`').collect();
    // An odd part is a code span when its closing backtick exists (an even count of parts
    // means the last backtick has no partner: it is text).
    let closed = if parts.len().is_multiple_of(2) {
        parts.len() - 1
    } else {
        parts.len()
    };
    let mut out = String::with_capacity(s.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && i < closed {
            out.push_str(&md_code(part));
        } else {
            if i % 2 == 1 {
                out.push_str("\\`");
            }
            md_prose(&mut out, part);
        }
    }
    out
}

/// Append `s` as inert Markdown text (see [`md_text`]).
fn md_prose(out: &mut String, s: &str) {
    let chars: Vec<char> = s.chars().collect();
    let mut word_start = true;
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        if word_start && starts_block(&chars[i..]) {
            out.push('\\');
        }
        match c {
            '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '#' => {
                out.push_str("\\#");
                if next.is_some_and(char::is_alphanumeric) {
                    out.push('\u{200b}');
                }
            }
            '@' => {
                out.push('@');
                if next.is_some_and(|n| n.is_alphanumeric() || n == '-' || n == '_') {
                    out.push('\u{200b}');
                }
            }
            ':' if chars[i + 1..].starts_with(&['/', '/']) => out.push_str(":\u{200b}"),
            '.' if i >= 3
                && chars[i - 3..i]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("www") =>
            {
                out.push_str("\u{200b}.");
            }
            _ => out.push(c),
        }
        word_start = c.is_whitespace();
    }
}

/// Whether a word starting `rest` would open a block if a wrapped line began with it: a list
/// item (`-`, `+`, `*`, `1.`, `1)`), a setext underline or thematic break (`---`, `===`).
fn starts_block(rest: &[char]) -> bool {
    let word: Vec<char> = rest
        .iter()
        .copied()
        .take_while(|c| !c.is_whitespace())
        .collect();
    match word.first() {
        Some('-' | '+' | '=') => word.iter().all(|&c| c == word[0]),
        Some(c) if c.is_ascii_digit() => {
            let digits = word.iter().take_while(|c| c.is_ascii_digit()).count();
            digits == word.len() - 1 && matches!(word[digits], '.' | ')')
        }
        _ => false,
    }
}

/// The text of a DOT double-quoted string: `"` and `\` escaped (so no `\N`, `\G`… label
/// escape of Graphviz applies), control characters written visibly.
pub fn dot(s: &str) -> String {
    terminal(s).replace('\\', "\\\\").replace('"', "\\\"")
}

/// The text of a Mermaid `["…"]` label: the characters Mermaid or its HTML labels read (`"`,
/// `#`, `<`, `>`, `&`, backtick) as Mermaid entity codes, control characters written visibly.
pub fn mermaid(s: &str) -> String {
    let s = terminal(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '`' => out.push_str("#96;"),
            _ => out.push(c),
        }
    }
    out
}

/// A path in a diff header as git writes it with `core.quotePath` (its default): unchanged
/// unless it holds `"`, `\`, a control character or a non-ASCII byte; then in double quotes,
/// with C escapes (`\t`, `\n`, `\"`, `\\`…) and three-digit octal for the other bytes.
/// `git apply` and `patch` read it back.
pub fn git_path(path: &str) -> Cow<'_, str> {
    let needs = |b: u8| b < 0x20 || b == 0x7f || b >= 0x80 || b == b'"' || b == b'\\';
    if !path.bytes().any(needs) {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 8);
    out.push('"');
    for b in path.bytes() {
        match b {
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b if needs(b) => out.push_str(&format!("\\{b:03o}")),
            b => out.push(char::from(b)),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// The end of a `---`/`+++` line naming `path`: git adds a tab after a name holding a space,
/// so that `patch` knows where it ends.
pub fn git_path_end(path: &str) -> &'static str {
    if path.contains(' ') { "\t" } else { "" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_sees_no_control_or_bidi_character() {
        let hostile = "a\x1b]52;c;aGk=\x07b\u{9b}31m\u{202e}c\nd\te";
        let shown = terminal(hostile);
        assert_eq!(
            shown,
            "a\\x1b]52;c;aGk=\\x07b\\x9b31m\\u{202e}c\\x0ad\\x09e"
        );
        assert!(!shown.chars().any(unsafe_on_terminal));
        assert_eq!(terminal_lines("a\x1b[8m\nb\tc"), "a\\x1b[8m\nb\tc");
        assert_eq!(terminal_lines("a\r\nevil\rgood"), "a\r\nevil\\x0dgood");
        assert!(matches!(terminal("plain ü"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_code_span_cannot_be_left() {
        assert_eq!(md_code("apps/x.yaml"), "`apps/x.yaml`");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("``x"), "``` ``x ```");
        assert_eq!(md_code("a\n\nb"), "`a\\x0a\\x0ab`");
    }

    #[test]
    fn prose_is_inert_markdown() {
        assert_eq!(
            md_text("<img src=x> [a](http://e.example) @everyone #12 www.e.example **b** &#64;"),
            "\\<img src=x\\> \\[a\\](http:\u{200b}//e.example) @\u{200b}everyone \\#\u{200b}12 \
             www\u{200b}.e.example \\*\\*b\\*\\* \\&\\#\u{200b}64;"
        );
        // Code spans of the message stay code spans; a stray backtick is text.
        assert_eq!(md_text("run `fluxmend fix` now"), "run `fluxmend fix` now");
        assert_eq!(md_text("a ` b"), "a \\` b");
        assert_eq!(md_text("`x`y`"), "`x`y\\`");
        // A word that would start a block if a wrapped line began with it.
        assert_eq!(md_text("a - b 1. c --- d"), "a \\- b \\1. c \\--- d");
        assert_eq!(
            md_text("flux-system/apps (wait: true)"),
            "flux-system/apps (wait: true)"
        );
    }

    #[test]
    fn graph_labels_are_quoted() {
        assert_eq!(dot("a\"b\\N"), "a\\\"b\\\\N");
        assert_eq!(mermaid("a\"]<b>#`&"), "a#quot;]#lt;b#gt;#35;#96;#amp;");
    }

    #[test]
    fn paths_are_quoted_as_git_quotes_them() {
        assert_eq!(git_path("a/plain dir/x.yaml"), "a/plain dir/x.yaml");
        assert_eq!(git_path("a/t\tb\"c\\d"), "\"a/t\\tb\\\"c\\\\d\"");
        assert_eq!(git_path("a/ü\x1b"), "\"a/\\303\\274\\033\"");
        assert_eq!(git_path_end("a b"), "\t");
        assert_eq!(git_path_end("ab"), "");
    }
}
