//! A tmux server per test for the end-to-end tests: the real binary in a real terminal, driven
//! with send-keys and read back with capture-pane. Needs tmux (`.ci/run` installs it).

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::cli::BIN;

/// A tmux server on its own socket, killed when dropped (also when a test fails).
pub struct Tmux {
    socket: String,
    /// The pane's HOME-like directory: config home and working directory of gpulse.
    pub _home: tempfile::TempDir,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Tmux {
    /// Start `gpulse <args>` in a `w`×`h` window with `env` set. The pane stays after the
    /// program exits, so its exit status and screen can be read.
    pub fn start(w: u16, h: u16, env: &str, args: &str) -> Tmux {
        let socket = format!(
            "gpulse-e2e-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let home = tempfile::tempdir().expect("tempdir");
        let tmux = Tmux {
            socket,
            _home: home,
        };
        // No config file from the machine running the tests. The shell around gpulse writes its
        // exit status to a file (it waits for its child; tmux's own pane status is not reliable
        // when several servers run at once), then keeps the pane alive for a while: the modes of
        // a dead pane (its cursor's visibility) are not what the program left.
        let cmd = format!(
            "cd {home} && env XDG_CONFIG_HOME={home} TERM=xterm-256color {env} {BIN} {args}; echo $? > {home}/status; sleep 30",
            home = tmux._home.path().display()
        );
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "respawn-pane",
            "-k",
            "-t",
            "e2e",
            &cmd,
        ]);
        tmux
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux must be installed (.ci/run installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn capture_with_escapes(&self) -> String {
        self.run(&["capture-pane", "-p", "-e", "-t", "e2e"])
    }

    pub fn format(&self, f: &str) -> String {
        self.run(&["display-message", "-p", "-t", "e2e", f])
            .trim()
            .to_string()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Poll the screen until `pred` holds; the screen at that moment.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.capture();
            if pred(&screen) {
                // A capture may catch a frame half written: the screen a moment later, if it
                // still matches, holds the whole frame.
                std::thread::sleep(Duration::from_millis(40));
                let settled = self.capture();
                if pred(&settled) {
                    return settled;
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The PID of gpulse (the child of the pane's shell).
    pub fn gpulse_pid(&self) -> String {
        let shell = self.format("#{pane_pid}");
        let out = Command::new("ps")
            .args(["-o", "pid=", "--ppid", &shell])
            .output()
            .expect("ps");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Wait for gpulse to exit; its exit status.
    pub fn wait_exit(&self) -> i32 {
        let path = self._home.path().join("status");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(code) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return code;
            }
            assert!(
                Instant::now() < deadline,
                "still running:\n{}",
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
