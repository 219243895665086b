//! The house's layering, checked: every `crate::…` path in `src/` points down or across, never
//! up, the top-level modules import each other without a circle, and only `src/tui/` names the
//! terminal crates. The layers are the ones `docs/ARCHITECTURE.md` describes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules, lowest layer first. A module may import its own layer or any lower one.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "model",
            "printable",
            "capped_read",
            "clock",
            "tls_pem",
            "cert_validity",
        ],
    ),
    ("backends", &["backend", "host"]),
    (
        "history and detector",
        &[
            "sampler",
            "recording",
            "history",
            "ledger",
            "timeline",
            "detector",
        ],
    ),
    ("engine", &["engine"]),
    ("pipeline", &["pipeline"]),
    (
        "front ends",
        &["analyze", "output", "fleet", "doctor", "config", "tui"],
    ),
    ("commands", &["cli", "commands"]),
];

const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm"];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, members)| members.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`src/engine/mod.rs` → `engine`); `None`
/// for the crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The code of a file without comments, so a doc link to an upper layer is not an import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module a piece of code names through `crate::`, including the members of
/// a `use crate::{a, b::c}` group.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            named.extend(group_heads(group));
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !head.is_empty() {
                named.insert(head);
            }
        }
    }
    named
}

/// The first segment of each item of a `{…}` group (nested groups skipped), up to its closing
/// brace.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    let mut word = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if depth == 0 && item_start && (c.is_alphanumeric() || c == '_') => word.push(c),
            _ => {
                if !word.is_empty() {
                    heads.push(std::mem::take(&mut word));
                    item_start = false;
                }
            }
        }
        if c == ',' && depth == 0 && !word.is_empty() {
            heads.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        heads.push(word);
    }
    heads
}

struct House {
    /// (file, the top-level module it belongs to, the modules it imports)
    files: Vec<(PathBuf, String, BTreeSet<String>)>,
}

fn read_house() -> House {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    let files = paths
        .into_iter()
        .filter_map(|path| {
            let module = module_of(&src, &path)?;
            let code = code_of(&fs::read_to_string(&path).expect("source is readable"));
            let imports = crate_paths(&code);
            Some((path, module, imports))
        })
        .collect();
    House { files }
}

#[test]
fn every_top_level_module_has_a_layer() {
    let house = read_house();
    let unplaced: BTreeSet<&String> = house
        .files
        .iter()
        .map(|(_, module, _)| module)
        .filter(|module| layer_of(module).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules without a layer (add them to LAYERS and docs/ARCHITECTURE.md): {unplaced:?}"
    );
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let house = read_house();
    let mut upward = Vec::new();
    for (path, module, imports) in &house.files {
        let Some(own) = layer_of(module) else {
            continue;
        };
        for imported in imports {
            if let Some(theirs) = layer_of(imported) {
                if theirs > own {
                    upward.push(format!(
                        "{} ({}) imports {imported} ({})",
                        path.display(),
                        LAYERS[own].0,
                        LAYERS[theirs].0
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run back up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn top_level_modules_import_each_other_without_a_circle() {
    let house = read_house();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (_, module, imports) in &house.files {
        for imported in imports {
            if imported != module && layer_of(imported).is_some() {
                edges.entry(module).or_default().insert(imported);
            }
        }
    }
    // Depth-first search for a back edge; the path to it names the circle.
    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node);
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        let circle = visit(node, &edges, &mut Vec::new(), &mut done);
        assert!(
            circle.is_none(),
            "import circle: {}",
            circle.unwrap_or_default().join(" → ")
        );
    }
}

#[test]
fn only_the_tui_touches_the_terminal() {
    let house = read_house();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let outside: Vec<String> = house
        .files
        .iter()
        .filter(|(_, module, _)| module != "tui")
        .filter_map(|(path, _, _)| {
            let code = code_of(&fs::read_to_string(path).ok()?);
            let named: Vec<&str> = TERMINAL_CRATES
                .iter()
                .copied()
                .filter(|krate| code.contains(&format!("{krate}::")))
                .collect();
            (!named.is_empty()).then(|| {
                format!(
                    "{} uses {named:?}",
                    path.strip_prefix(&src).unwrap_or(path).display()
                )
            })
        })
        .collect();
    assert!(
        outside.is_empty(),
        "terminal crates outside src/tui/:\n{}",
        outside.join("\n")
    );
}

#[test]
fn the_checker_sees_imports_in_groups_and_paths_but_not_in_comments() {
    let code = code_of(
        "use crate::{model::{Sample, Gpu}, clock};\n// see crate::tui\nlet x = crate::engine::run();\n",
    );
    let named = crate_paths(&code);
    let expected: BTreeSet<String> = ["model", "clock", "engine"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(named, expected);
}
