//! JSON outputs checked against their JSON Schema (under `assets/`) with Python's `jsonschema`.

use std::io::Write;
use std::process::{Command, Stdio};

use super::net::tool;

/// Validate every JSON document in `docs` (one per line) against a schema file under `assets/`,
/// with Python's `jsonschema` (Draft 2020-12). Returns `false` when the validator is missing
/// outside CI.
pub fn validate(schema: &str, docs: &[String]) -> bool {
    let Some(python) = tool("python3") else {
        return false;
    };
    let has = Command::new(&python)
        .args(["-c", "import jsonschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3-jsonschema is required in CI; .ci/run installs it"
        );
        eprintln!("note: python3 jsonschema is missing; schema validation skipped");
        return false;
    }
    let schema_path = super::repo("assets").join(schema);
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
n = 0
for i, line in enumerate(sys.stdin):
    if not line.strip():
        continue
    errors = sorted(v.iter_errors(json.loads(line)), key=lambda e: list(e.path))
    for e in errors:
        print(f"document {i + 1}: {list(e.path)}: {e.message}")
    if errors:
        sys.exit(1)
    n += 1
print(n)
"#;
    let mut child = Command::new(python)
        .args(["-c", script])
        .arg(&schema_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for d in docs {
            let compact: serde_json::Value = serde_json::from_str(d).expect("valid JSON");
            writeln!(stdin, "{compact}").expect("write to the validator");
        }
    }
    let out = child.wait_with_output().expect("validator output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schema {schema} rejects the output:\n{text}"
    );
    assert_eq!(text.trim(), docs.len().to_string(), "documents validated");
    true
}
