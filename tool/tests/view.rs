//! `acp view` in a browser: transcripts (v1, v2 with a cancelled turn, one full of findings, the
//! official conductor's trace) are rendered, each page is loaded in headless Chromium, and its DOM
//! (after the script ran) is checked against the transcript and against `acp check --format
//! json` on it: a row per message with its verdict, the request ↔ response links, the turn spans,
//! and every finding on its message. A screenshot of each page must not be blank.
//!
//! The browser: `$ACP_VIEW_BROWSER` (CI sets it, from `tool/tests/view/chromium.sh`, which
//! installs Debian's `chromium`); when it is set, a browser that does not run fails the tests.
//! Unset, `chromium` on PATH is used, and without one the browser tests say so and skip.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ACP: &str = env!("CARGO_BIN_EXE_acp");

fn transcript(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts").join(name)
}

/// The browser to load pages in, or `None` (skip) when none is configured or on PATH.
fn browser() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ACP_VIEW_BROWSER") {
        return Some(PathBuf::from(path));
    }
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("chromium")).find(|p| p.is_file()));
    if found.is_none() {
        eprintln!("skipped: no browser (set ACP_VIEW_BROWSER, or run tool/tests/view/chromium.sh)");
    }
    found
}

/// Runs headless Chromium (through `chromium.sh run`, which holds the flags) on `url`: the DOM
/// after the scripts ran, and with `screenshot` a PNG.
fn chromium(browser: &Path, url: &str, screenshot: Option<&Path>) -> String {
    let mut command = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/view/chromium.sh"));
    command.args(["run", "--window-size=1400,900", "--dump-dom"]).env("ACP_VIEW_BROWSER", browser);
    if let Some(png) = screenshot {
        command.arg(format!("--screenshot={}", png.display()));
    }
    let out = command.arg(url).stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("chromium.sh: {e}"));
    assert!(out.status.success(), "{}: {}", browser.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("the DOM is UTF-8")
}

/// The size of a blank page's screenshot, to tell a drawn page from an empty one.
fn blank_screenshot(browser: &Path, dir: &Path) -> usize {
    let html = dir.join("blank.html");
    std::fs::write(&html, "<!DOCTYPE html><html><body></body></html>").expect("write");
    let png = dir.join("blank.png");
    chromium(browser, &format!("file://{}", html.display()), Some(&png));
    std::fs::read(&png).expect("blank screenshot").len()
}

/// `acp view FILE -o OUT`.
fn view(file: &Path, out: &Path) {
    let status = Command::new(ACP).arg("view").arg(file).arg("-o").arg(out).status().expect("acp view");
    assert!(status.success(), "acp view {}", file.display());
}

/// `acp check --format json FILE`: the reports, and the summary object (end findings included).
fn check(file: &Path) -> (Vec<Value>, Value) {
    let out = Command::new(ACP).args(["check", "--format", "json"]).arg(file).output().expect("acp check");
    let mut lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let summary = lines.pop().expect("a summary");
    (lines, summary)
}

/// Attribute and text values as the DOM serialiser wrote them, decoded.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The value of `name` in the start tag at the beginning of `tag`.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let head = &tag[..tag.find('>')?];
    let start = head.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = head[start..].find('"')?;
    Some(unescape(&head[start..start + len]))
}

/// The elements whose start tag begins with `open` (`<div class="row`), each with what follows
/// up to the next one.
fn elements<'a>(dom: &'a str, open: &str) -> Vec<&'a str> {
    let mut found: Vec<&str> = dom.match_indices(open).map(|(i, _)| &dom[i..]).collect();
    for i in 0..found.len().saturating_sub(1) {
        let next = found[i].len() - found[i + 1].len();
        found[i] = &found[i][..next];
    }
    found
}

/// One row of the page, as its DOM says.
#[derive(Debug)]
struct PageRow {
    status: String,
    pair: Option<usize>,
    turn: Option<String>,
    /// The text of the arrow's label (`<b>`).
    label: String,
    /// The titles of its finding marks.
    findings: Vec<String>,
}

fn page_rows(dom: &str) -> BTreeMap<usize, PageRow> {
    let mut rows = BTreeMap::new();
    for row in elements(dom, "<div class=\"row ") {
        let Some(line) = attribute(row, "data-line") else { continue };
        let label = row.split_once("<b>").and_then(|(_, rest)| rest.split_once("</b>")).map(|(b, _)| unescape(b));
        let findings = elements(row, "<span class=\"fd ").iter().filter_map(|f| attribute(f, "title")).collect();
        let parsed = PageRow {
            status: attribute(row, "data-status").unwrap_or_default(),
            pair: attribute(row, "data-pair-line").map(|p| p.parse().expect("a line")),
            turn: attribute(row, "data-turn"),
            label: label.unwrap_or_default(),
            findings,
        };
        assert!(rows.insert(line.parse().expect("a line"), parsed).is_none(), "line {line} drawn twice");
    }
    rows
}

/// A turn span: (start line, end line or "open", stop reason, cancel sent).
type Span = (String, String, Option<String>, bool);

fn page_turns(dom: &str) -> Vec<Span> {
    elements(dom, "<div class=\"turn")
        .iter()
        .map(|t| {
            (
                attribute(t, "data-start-line").unwrap_or_default(),
                attribute(t, "data-end-line").unwrap_or_default(),
                attribute(t, "data-stop"),
                attribute(t, "data-cancelled").is_some(),
            )
        })
        .collect()
}

/// The request ↔ response pairs of a transcript, from `acp check`'s reports: (link, requester,
/// id) of each request, answered by the next response of the other side with that id.
fn expected_pairs(reports: &[Value]) -> HashMap<usize, usize> {
    let mut pending = HashMap::new();
    let mut pairs = HashMap::new();
    for r in reports {
        let line = r["line"].as_u64().expect("line") as usize;
        let (from, id) = (r["from"].as_str().unwrap_or_default(), r["id"].as_str().map(str::to_string));
        let Some(id) = id else { continue };
        let other = if from == "client" { "agent" } else { "client" };
        match r["kind"].as_str() {
            Some("request") => {
                pending.insert((r["link"].clone(), from.to_string(), id), line);
            }
            Some("response" | "error-response") => {
                if let Some(request) = pending.remove(&(r["link"].clone(), other.to_string(), id)) {
                    pairs.insert(request, line);
                    pairs.insert(line, request);
                }
            }
            _ => {}
        }
    }
    pairs
}

/// Every finding of `acp check` on a message: (line, text the page must show for it).
fn expected_findings(reports: &[Value], summary: &Value) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let at = |path: &str, text: String| if path.is_empty() { text } else { format!("{path}: {text}") };
    let rule = |v: &Value| {
        format!(
            "{} ({}, {}): {}",
            v["rule"].as_str().unwrap_or_default(),
            v["tier"].as_str().unwrap_or_default(),
            v["by"].as_str().unwrap_or_default(),
            v["detail"].as_str().unwrap_or_default()
        )
    };
    for r in reports {
        let line = r["line"].as_u64().expect("line") as usize;
        for p in r["problems"].as_array().into_iter().flatten() {
            found.push((
                line,
                at(p["path"].as_str().unwrap_or_default(), p["reason"].as_str().unwrap_or_default().into()),
            ));
        }
        for d in r["differences"].as_array().into_iter().flatten() {
            let show = |v: &Value| if v.is_null() { "(absent)".to_string() } else { v.to_string() };
            let text = format!("received {}, re-encoded {}", show(&d["received"]), show(&d["reencoded"]));
            found.push((line, at(d["path"].as_str().unwrap_or_default(), text)));
        }
        for w in r["warnings"].as_array().into_iter().flatten() {
            found.push((
                line,
                at(w["path"].as_str().unwrap_or_default(), w["reason"].as_str().unwrap_or_default().into()),
            ));
        }
        for v in r["violations"].as_array().into_iter().flatten() {
            found.push((line, rule(v)));
        }
    }
    for v in summary["violations"].as_array().into_iter().flatten() {
        found.push((v["line"].as_u64().expect("line") as usize, format!("end: {}", rule(v))));
    }
    found
}

/// The PNG's width and height, from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let word = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (word(16), word(20))
}

/// Renders `file`, loads the page, checks it against `acp check`; returns the page's DOM.
fn render_and_check(browser: &Path, dir: &Path, name: &str, turns: &[Span], blank: usize) -> String {
    let file = transcript(name);
    let html = dir.join(name).with_extension("html");
    view(&file, &html);
    let size = std::fs::metadata(&html).expect("the page").len();
    // Every row drawn (`#all`): the DOM has all of them to check.
    let dom = chromium(browser, &format!("file://{}#all", html.display()), None);
    assert!(dom.contains("data-ready=\""), "{name}: the page's script did not finish");
    let rows = page_rows(&dom);
    let (reports, summary) = check(&file);
    // A row per message, in order, with the checker's verdict and the method.
    let lines: Vec<usize> = reports.iter().map(|r| r["line"].as_u64().expect("line") as usize).collect();
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), lines, "{name}: rows");
    for r in &reports {
        let row = &rows[&(r["line"].as_u64().expect("line") as usize)];
        assert_eq!(row.status, r["status"].as_str().expect("status"), "{name}: {r}");
        if let Some(method) = r["method"].as_str() {
            assert!(row.label.starts_with(method), "{name}: label {:?} for {r}", row.label);
        }
    }
    // Request ↔ response links.
    let pairs = expected_pairs(&reports);
    for (line, row) in &rows {
        assert_eq!(row.pair, pairs.get(line).copied(), "{name}: the pair of line {line}");
    }
    // Turn spans, and their rows marked.
    assert_eq!(page_turns(&dom), turns, "{name}: turns");
    for (start, end, ..) in turns {
        let start: usize = start.parse().expect("a line");
        assert!(rows[&start].turn.is_some(), "{name}: line {start} opens a turn");
        if let Ok(end) = end.parse::<usize>() {
            assert!(rows[&end].turn.is_some(), "{name}: line {end} ends a turn");
        }
    }
    // Every finding on its message (or, about no message, in the list).
    let findings = expected_findings(&reports, &summary);
    for (line, text) in &findings {
        match rows.get(line) {
            Some(row) => assert!(
                row.findings.iter().any(|f| f.contains(text.as_str())),
                "{name}: line {line}: {text:?} not among {:?}",
                row.findings
            ),
            None => {
                let listed = elements(&dom, "<li class=\"f")
                    .into_iter()
                    .filter(|li| attribute(li, "data-line").as_deref() == Some("0"));
                let plain = text.trim_start_matches("end: ");
                let detail = plain.split_once("): ").map_or(plain, |(_, d)| d);
                assert!(listed.map(unescape).any(|li| li.contains(detail)), "{name}: end finding {text:?} not listed");
            }
        }
    }
    assert_eq!(elements(&dom, "<li class=\"f").len(), findings.len(), "{name}: the findings list");
    // No message text became markup: the page's two scripts only.
    assert_eq!(dom.matches("<script").count(), 2, "{name}: scripts in the DOM");
    // The page as it opens (rows drawn as they come into sight), and its screenshot.
    let png = dir.join(name).with_extension("png");
    let plain = chromium(browser, &format!("file://{}", html.display()), Some(&png));
    let rendered = plain.split_once("data-rendered=\"").and_then(|(_, r)| r.split('"').next()?.parse::<usize>().ok());
    assert!(rendered.is_some_and(|n| n > 0 && n <= lines.len()), "{name}: {rendered:?} rows drawn");
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert_eq!(png_size(&bytes), (1400, 900), "{name}");
    assert!(bytes.len() > 4 * blank, "{name}: a screenshot of {} bytes; a blank page's is {blank}", bytes.len());
    assert!(size < 1 << 20, "{name}: a page of {size} bytes");
    dom
}

fn span(start: &str, end: &str, stop: Option<&str>, cancelled: bool) -> Span {
    (start.into(), end.into(), stop.map(str::to_string), cancelled)
}

#[test]
fn pages_show_every_message_link_turn_and_finding() {
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let blank = blank_screenshot(&browser, dir.path());

    let v1 = [span("5", "7", Some("end_turn"), false), span("8", "13", Some("cancelled"), true)];
    render_and_check(&browser, dir.path(), "clean-v1-turns.jsonl", &v1, blank);
    let v2 = [span("7", "11", Some("end_turn"), false), span("15", "17", Some("cancelled"), true)];
    render_and_check(&browser, dir.path(), "clean-v2-turns.jsonl", &v2, blank);
    // Errors, lossy, a warning, rules on messages and at the end (one with no cause), and
    // `</script>` in a message.
    let turns = [span("5", "13", Some("end_turn"), true), span("15", "open", None, true)];
    let dom = render_and_check(&browser, dir.path(), "view-findings-v1.jsonl", &turns, blank);
    assert!(
        dom.contains("read &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; fix"),
        "the prompt shown as text"
    );
    // The tool call's rows are grouped under its id.
    assert_eq!(dom.matches("<span class=\"tool\"").count(), 2, "the tool call on its two updates");
}

#[test]
fn the_official_conductors_trace_renders_with_a_lane_per_component() {
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let blank = blank_screenshot(&browser, dir.path());
    // The client's turn through the proxy (link 0) and the proxy's with the agent (link 1).
    let turns = [span("9", "13", Some("end_turn"), false), span("10", "12", Some("end_turn"), false)];
    let dom = render_and_check(&browser, dir.path(), "recorded-official-conductor-trace.jsonl", &turns, blank);
    let lanes: Vec<String> = elements(&dom, "<span class=\"lane\"")
        .iter()
        .filter_map(|l| l.split_once('>').and_then(|(_, rest)| rest.split_once('<')).map(|(t, _)| unescape(t)))
        .collect();
    assert_eq!(lanes, ["Client", "Proxy(0)", "Agent"]);
}

/// The embedded data of a page (no browser needed).
fn page_data(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"acp-data\">";
    let start = html.find(open).expect("the data") + open.len();
    let len = html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..start + len]).expect("the data is JSON")
}

#[test]
fn tap_writes_the_session_as_a_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let html = dir.path().join("tap.html");
    // An "agent" that answers the one request it reads.
    let agent = r#"read line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'"#;
    let mut child = Command::new(ACP)
        .args(["tap", "--html"])
        .arg(&html)
        .args(["--", "sh", "-c", agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("tap");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":1}}}}"#)
            .expect("write");
    }
    let out = child.wait_with_output().expect("tap ends");
    assert!(out.status.success());
    let data = page_data(&std::fs::read_to_string(&html).expect("the page"));
    let file = &data["files"][0];
    // A request and its response, both ok, their leading "jsonrpc" left out (`view.js` says how
    // `code` reads).
    assert_eq!(file["code"], serde_json::json!([25, 27]));
    assert_eq!(file["pair"], serde_json::json!([1, -1]));
    assert_eq!(file["messages"][1], serde_json::json!({"id": 0, "result": {"protocolVersion": 1}}));
}

#[test]
fn several_files_make_one_page_and_an_unreadable_one_exits_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let html = dir.path().join("two.html");
    let status = Command::new(ACP)
        .arg("view")
        .args([transcript("echo-v1.jsonl"), transcript("echo-v2.jsonl")])
        .arg("-o")
        .arg(&html)
        .status()
        .expect("acp view");
    assert!(status.success());
    let data = page_data(&std::fs::read_to_string(&html).expect("the page"));
    assert_eq!(data["files"].as_array().map(Vec::len), Some(2));
    let out = Command::new(ACP).args(["view", "no-such-file.jsonl"]).output().expect("acp view");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no-such-file.jsonl"));
}

/// The session state the page shows at a selected message (`#line=N`): the same as `acp state
/// --at N`, at a line in the middle of codex's tool turn and at its last line.
#[test]
fn the_session_state_at_a_selected_message_is_acp_states() {
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = transcript("state/codex-v2-tool.jsonl");
    let html = dir.path().join("state.html");
    view(&file, &html);
    let lines = std::fs::read_to_string(&file).expect("transcript").lines().count();
    for line in [20, lines] {
        let dom = chromium(&browser, &format!("file://{}#line={line}", html.display()), None);
        let open = "<details class=\"state\" open=\"\"><summary>";
        let box_at = dom.find(open).unwrap_or_else(|| panic!("no state box at line {line}"));
        let pre = &dom[box_at..];
        let start = pre.find("<pre class=\"json\">").expect("the state's JSON") + "<pre class=\"json\">".len();
        let end = pre[start..].find("</pre>").expect("its end");
        let shown: Value = serde_json::from_str(&unescape(&pre[start..start + end])).expect("JSON");
        let out = Command::new(ACP).args(["state", "--at", &line.to_string()]).arg(&file).output().expect("acp state");
        let replayed: Value = serde_json::from_slice(&out.stdout).expect("acp state's JSON");
        let session = replayed["sessions"].as_object().and_then(|s| s.values().next()).expect("one session");
        assert_eq!(&shown, session, "line {line}");
        assert!(shown["agentMessage"].as_object().is_some_and(|m| !m.is_empty()) || line < lines, "line {line}");
    }
}
