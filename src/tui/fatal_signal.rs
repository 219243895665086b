//! The terminal restored when the process dies without unwinding.
//!
//! A panic unwinds into the panic hook, and SIGTERM/SIGINT/SIGHUP reach the event loop; both
//! restore the terminal. An abort does neither: a failed allocation, a panic while panicking,
//! `panic = "abort"`, `kill -ABRT`, a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE) or `kill -QUIT`
//! end the process at once and would leave the shell in the alternate screen, raw mode, the
//! cursor hidden and mouse reporting on. While the screen is up, a handler for those signals
//! writes the bytes that undo all of it, puts the terminal's saved settings back, and lets the
//! signal take its course: a signal sent (`abort`, `kill`) its default action, a fault the action
//! that was there before (the runtime's stack-overflow report, else the default). The process
//! still dies of it, with its core dump and exit status.
//! Only SIGKILL cannot be caught.
//!
//! The handler does only what a signal handler may: a `write(2)` of a fixed byte string and a
//! `tcsetattr(3)` with settings saved before raw mode, then `sigaction(2)` and `raise(3)`.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Mouse reporting off, attributes reset, the cursor shown, the alternate screen left. It starts
/// with `ESC`, which ends any escape sequence a frame was cut in the middle of.
const RESTORE: &[u8] = b"\x1b[?1006l\x1b[?1000l\x1b[0m\x1b[?25h\x1b[?1049l";

const SIGNALS: [libc::c_int; 6] = [
    libc::SIGABRT,
    libc::SIGQUIT,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
];

/// Whether the screen is up (the handler restores only then).
static ARMED: AtomicBool = AtomicBool::new(false);

/// The terminal's settings before raw mode, and the descriptor they belong to.
static SAVED: OnceLock<(RawFd, libc::termios)> = OnceLock::new();

/// What each signal did before the handler was installed, in the order of [`SIGNALS`].
static PREVIOUS: OnceLock<[libc::sigaction; SIGNALS.len()]> = OnceLock::new();

/// Save the terminal's settings and install the handlers (once); called before raw mode.
pub fn arm() {
    save_settings();
    if PREVIOUS.get().is_none() {
        if let Some(previous) = install() {
            let _ = PREVIOUS.set(previous);
        }
    }
    ARMED.store(true, Ordering::SeqCst);
}

/// The terminal was restored the ordinary way.
pub fn disarm() {
    ARMED.store(false, Ordering::SeqCst);
}

/// The descriptor raw mode changes (crossterm's choice: stdin when it is a terminal, else the
/// controlling terminal) and its settings now.
fn save_settings() {
    if SAVED.get().is_some() {
        return;
    }
    // SAFETY: isatty only reads the descriptor's state.
    let fd = if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
        libc::STDIN_FILENO
    } else {
        // SAFETY: a NUL-terminated path; the descriptor is kept open for the handler's use for
        // the rest of the process.
        unsafe { libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) }
    };
    if fd < 0 {
        return;
    }
    // SAFETY: termios is plain data; tcgetattr fills it and reports whether it did.
    let mut settings: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(fd, &mut settings) } == 0 {
        let _ = SAVED.set((fd, settings));
    }
}

/// Install [`on_fatal_signal`] for every signal of [`SIGNALS`]; what each did before.
fn install() -> Option<[libc::sigaction; SIGNALS.len()]> {
    // SAFETY: sigaction is plain data, zeroed is a valid empty action; sigemptyset initialises
    // its mask. The handler only makes async-signal-safe calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fatal_signal
            as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
            as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        // SA_NODEFER lets the handler raise the same signal again once the old action is back;
        // SA_ONSTACK runs it on the thread's signal stack (a stack overflow leaves no other).
        action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_ONSTACK;
        let mut previous: [libc::sigaction; SIGNALS.len()] = std::mem::zeroed();
        for (sig, old) in SIGNALS.iter().zip(previous.iter_mut()) {
            if libc::sigaction(*sig, &action, old) != 0 {
                return None;
            }
        }
        Some(previous)
    }
}

extern "C" fn on_fatal_signal(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    if ARMED.swap(false, Ordering::SeqCst) {
        // SAFETY: write and tcsetattr are async-signal-safe; the bytes and settings are static.
        unsafe {
            libc::write(libc::STDOUT_FILENO, RESTORE.as_ptr().cast(), RESTORE.len());
            if let Some((fd, settings)) = SAVED.get() {
                libc::tcsetattr(*fd, libc::TCSANOW, settings);
            }
        }
    }
    let previous = PREVIOUS
        .get()
        .and_then(|p| SIGNALS.iter().position(|s| *s == sig).map(|i| p[i]));
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; sigaction, signal and
    // raise are async-signal-safe.
    unsafe {
        let fault = !info.is_null() && (*info).si_code > 0;
        match previous {
            // A fault the kernel raised happens again when the faulting instruction runs again
            // on return, now meeting the old action (the runtime's report of a stack overflow,
            // or the default) with its own details.
            Some(old) if fault => {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
            // A signal sent (abort, kill) takes its default action: the process dies of it.
            _ => {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    }
}
