//! JSON outputs checked against their JSON Schema (under `assets/`) with Python's `jsonschema`.

use std::io::Write;
use std::process::{Command, Stdio};

use super::net::tool;

/// Validate every JSON document in `docs` (one per line) against a schema file under `assets/`,
/// with Python's `jsonschema` (Draft 2020-12) and its format checks (`date-time` needs
/// `rfc3339-validator`). The interpreter is `GPULSE_SCHEMA_PYTHON` (set by `.ci/run`, which then
/// requires it), else `python3`. Returns `false` when no interpreter has the validator and
/// neither `GPULSE_SCHEMA_PYTHON` nor `CI` asks for it.
pub fn validate(schema: &str, docs: &[String]) -> bool {
    let required =
        std::env::var_os("GPULSE_SCHEMA_PYTHON").is_some() || std::env::var_os("CI").is_some();
    let python = match std::env::var_os("GPULSE_SCHEMA_PYTHON") {
        Some(p) => Some(std::path::PathBuf::from(p)),
        None => tool("python3"),
    };
    let ready = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args([
                "-c",
                "import jsonschema, sys; c = jsonschema.FormatChecker(); \
                 sys.exit(0 if not c.conforms('yesterday', 'date-time') else 1)",
            ])
            .status()
            .is_ok_and(|s| s.success())
    });
    let Some(python) = python.filter(|_| ready) else {
        assert!(
            !required,
            "no Python with jsonschema and rfc3339-validator (date-time checks); .ci/run installs them"
        );
        eprintln!("note: python3 with jsonschema and rfc3339-validator is missing; schema validation skipped");
        return false;
    };
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
