//! The real terminal: a ratatui backend that costs little per frame, and the key reader.
//!
//! ratatui's own crossterm backend writes every escape sequence through `Stdout`'s line buffer
//! (a lock, a newline search and a `write` syscall per KiB: seven per frame at 160×48 with the
//! charts moving) and formats every cursor move through `core::fmt`; it also asks the terminal
//! for its size (`open("/dev/tty")` + `ioctl`) on every frame, and crossterm's `EventStream`
//! spins on its reader lock each time it is polled. Here a frame is built in one reusable byte
//! buffer (cursor moves and text written directly, colours and attributes through crossterm) and
//! leaves in one `write`; the size is asked again only after a resize event; keys come from a
//! thread blocked in `crossterm::event::read`. The bytes are the same as ratatui's backend
//! writes (a test compares them).

use std::io::{self, Stdout, Write};

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::event::Event;
use crossterm::queue;
use crossterm::style::{
    Attribute, Color as CColor, Colors, Print, SetAttribute, SetBackgroundColor, SetColors,
    SetForegroundColor, SetUnderlineColor,
};
use crossterm::terminal::{self, Clear};
use ratatui::backend::{Backend, ClearType, IntoCrossterm, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier};

use super::canvas::PartsTerminal;

/// The fleet screen's terminal (drawn whole each frame).
pub type Term = ratatui::Terminal<TermBackend<Stdout>>;

/// The dashboard's terminal: drawn in parts, only those that changed (see
/// [`crate::tui::canvas`]).
pub type Screen = PartsTerminal<TermBackend<Stdout>>;

/// Why there is no terminal to draw on and read keys from, if there is none. The screen is drawn
/// on stdout, which must be a terminal; keys come from stdin, or when stdin is redirected from
/// the controlling terminal (`/dev/tty`), which a command run over `ssh` without `-t`, from cron
/// or from a service does not have. Asked before anything is drawn.
pub fn missing_terminal() -> Option<&'static str> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return Some("standard output is not one");
    }
    if !io::stdin().is_terminal() && std::fs::File::open("/dev/tty").is_err() {
        return Some("there is none to read keys from");
    }
    None
}

/// Enter raw mode and the alternate screen and return the terminal; a panic on this thread
/// restores the terminal before its message is printed, and so does an abort or a crash on any
/// thread ([`super::fatal_signal`]). [`restore`] undoes it.
pub fn init() -> io::Result<Term> {
    enter(false)?;
    ratatui::Terminal::new(TermBackend::new(io::stdout()))
}

/// As [`init`], for the dashboard; with `mouse`, the terminal also reports clicks and the wheel.
pub fn init_screen(mouse: bool) -> io::Result<Screen> {
    enter(mouse)?;
    Ok(PartsTerminal::new(TermBackend::new(io::stdout())))
}

/// The thread that entered the alternate screen, while it is entered: only that thread may
/// restore the terminal, as only it knows whether the screen is still in use.
static OWNER: std::sync::Mutex<Option<std::thread::ThreadId>> = std::sync::Mutex::new(None);

fn set_owner(owner: Option<std::thread::ThreadId>) {
    if let Ok(mut o) = OWNER.lock() {
        *o = owner;
    }
}

/// Whether the terminal is held by a thread other than this one.
fn held_by_another_thread() -> bool {
    // `try_lock`: a panic hook must not wait; a lock held elsewhere means "unknown", and then
    // leaving the screen alone is the safe side.
    match OWNER.try_lock() {
        Ok(o) => o.is_some_and(|id| id != std::thread::current().id()),
        Err(_) => true,
    }
}

/// Mouse reporting: presses, releases and the wheel (mode 1000, not motion: moving the pointer
/// over the screen wakes nothing), in SGR encoding (1006: any column, no byte limits).
const MOUSE_ON: &str = "\x1b[?1000h\x1b[?1006h";
const MOUSE_OFF: &str = "\x1b[?1006l\x1b[?1000l";

fn enter(mouse: bool) -> io::Result<()> {
    set_panic_hook();
    set_owner(Some(std::thread::current().id()));
    super::fatal_signal::arm();
    terminal::enable_raw_mode()?;
    crossterm::execute!(io::stdout(), terminal::EnterAlternateScreen)?;
    if mouse {
        let mut out = io::stdout();
        out.write_all(MOUSE_ON.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

/// Leave raw mode, mouse reporting and the alternate screen and show the cursor again (safe to
/// call more than once, and whether or not the mouse was on). (ratatui's terminal queues its own
/// "show the cursor" when dropped, into a frame that is never written.)
pub fn restore() {
    set_owner(None);
    super::fatal_signal::disarm();
    let _ = terminal::disable_raw_mode();
    let mut out = io::stdout();
    let _ = out.write_all(MOUSE_OFF.as_bytes());
    let _ = crossterm::execute!(out, terminal::LeaveAlternateScreen, Show);
}

/// A panic on the thread that owns the terminal restores it, then prints as usual. A panic on
/// any other thread while the screen is up (a query, the exporter) leaves the screen alone and
/// goes to the log: that thread's owner turns it into an error the screen shows.
fn set_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if held_by_another_thread() {
                let thread = std::thread::current();
                tracing::error!(
                    "thread '{}' failed: {info}",
                    thread.name().unwrap_or("unnamed")
                );
                return;
            }
            restore();
            hook(info);
        }));
    });
}

/// A ratatui backend writing ANSI escape sequences to `W`, one `write` per frame.
pub struct TermBackend<W: Write> {
    writer: W,
    /// The frame being built; sent and emptied by `flush`.
    out: Vec<u8>,
    /// The terminal's size, asked once and again after [`TermBackend::forget_size`].
    size: std::cell::Cell<Option<Size>>,
}

impl<W: Write> TermBackend<W> {
    pub fn new(writer: W) -> Self {
        TermBackend {
            writer,
            out: Vec::with_capacity(64 * 1024),
            size: std::cell::Cell::new(None),
        }
    }

    /// A backend for a terminal of a known size (one that is not asked: a file, a pipe, a
    /// benchmark's sink).
    pub fn sized(writer: W, size: Size) -> Self {
        let b = TermBackend::new(writer);
        b.size.set(Some(size));
        b
    }

    /// The terminal was resized: ask its size again before the next frame.
    pub fn forget_size(&self) {
        self.size.set(None);
    }
}

/// `ESC [ row ; col H` with 1-based row and column, as crossterm's `MoveTo` writes it.
fn move_to(out: &mut Vec<u8>, x: u16, y: u16) {
    out.extend_from_slice(b"\x1b[");
    push_decimal(out, u32::from(y) + 1);
    out.push(b';');
    push_decimal(out, u32::from(x) + 1);
    out.push(b'H');
}

fn push_decimal(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// The attribute changes from `from` to `to`, in the order ratatui's crossterm backend writes
/// them: removals first (bold and dim share one "normal intensity" reset, after which the one
/// kept is set again), then additions.
fn queue_modifiers(out: &mut Vec<u8>, from: Modifier, to: Modifier) -> io::Result<()> {
    let removed = from - to;
    let added = to - from;
    let mut set = |a: Attribute| queue!(out, SetAttribute(a));
    if removed.contains(Modifier::REVERSED) {
        set(Attribute::NoReverse)?;
    }
    let reset_intensity = removed.intersects(Modifier::BOLD | Modifier::DIM);
    if reset_intensity {
        set(Attribute::NormalIntensity)?;
        if to.contains(Modifier::DIM) {
            set(Attribute::Dim)?;
        }
        if to.contains(Modifier::BOLD) {
            set(Attribute::Bold)?;
        }
    }
    let removals = [
        (Modifier::ITALIC, Attribute::NoItalic),
        (Modifier::UNDERLINED, Attribute::NoUnderline),
        (Modifier::CROSSED_OUT, Attribute::NotCrossedOut),
        (Modifier::HIDDEN, Attribute::NoHidden),
    ];
    for (m, a) in removals {
        if removed.contains(m) {
            set(a)?;
        }
    }
    if removed.intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK) {
        set(Attribute::NoBlink)?;
    }
    let additions = [
        (Modifier::REVERSED, Attribute::Reverse, true),
        (Modifier::BOLD, Attribute::Bold, !reset_intensity),
        (Modifier::ITALIC, Attribute::Italic, true),
        (Modifier::UNDERLINED, Attribute::Underlined, true),
        (Modifier::DIM, Attribute::Dim, !reset_intensity),
        (Modifier::CROSSED_OUT, Attribute::CrossedOut, true),
        (Modifier::HIDDEN, Attribute::Hidden, true),
        (Modifier::SLOW_BLINK, Attribute::SlowBlink, true),
        (Modifier::RAPID_BLINK, Attribute::RapidBlink, true),
    ];
    for (m, a, when) in additions {
        if when && added.contains(m) {
            set(a)?;
        }
    }
    Ok(())
}

impl<W: Write> Backend for TermBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let out = &mut self.out;
        let mut fg = Color::Reset;
        let mut bg = Color::Reset;
        let mut underline = Color::Reset;
        let mut modifier = Modifier::empty();
        let mut last: Option<(u16, u16)> = None;
        for (x, y, cell) in content {
            // The cursor is where the previous symbol left it only right after that cell.
            let follows = matches!(last, Some((lx, ly)) if ly == y && lx.checked_add(1) == Some(x));
            if !follows {
                move_to(out, x, y);
            }
            last = Some((x, y));
            if cell.modifier != modifier {
                queue_modifiers(out, modifier, cell.modifier)?;
                modifier = cell.modifier;
            }
            if cell.fg != fg || cell.bg != bg {
                queue!(
                    out,
                    SetColors(Colors::new(
                        cell.fg.into_crossterm(),
                        cell.bg.into_crossterm()
                    ))
                )?;
                fg = cell.fg;
                bg = cell.bg;
            }
            if cell.underline_color != underline {
                queue!(
                    out,
                    SetUnderlineColor(cell.underline_color.into_crossterm())
                )?;
                underline = cell.underline_color;
            }
            out.extend_from_slice(cell.symbol().as_bytes());
        }
        queue!(
            out,
            SetForegroundColor(CColor::Reset),
            SetBackgroundColor(CColor::Reset),
            SetUnderlineColor(CColor::Reset),
            SetAttribute(Attribute::Reset),
        )
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        for _ in 0..n {
            queue!(self.out, Print("\n"))?;
        }
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        queue!(self.out, Hide)
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        queue!(self.out, Show)
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        // Only an inline viewport asks; the reply comes through the event reader.
        self.flush()?;
        crossterm::cursor::position().map(|(x, y)| Position { x, y })
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let p = position.into();
        queue!(self.out, MoveTo(p.x, p.y))
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        let t = match clear_type {
            ClearType::All => terminal::ClearType::All,
            ClearType::AfterCursor => terminal::ClearType::FromCursorDown,
            ClearType::BeforeCursor => terminal::ClearType::FromCursorUp,
            ClearType::CurrentLine => terminal::ClearType::CurrentLine,
            ClearType::UntilNewLine => terminal::ClearType::UntilNewLine,
        };
        queue!(self.out, Clear(t))
    }

    fn size(&self) -> io::Result<Size> {
        if let Some(s) = self.size.get() {
            return Ok(s);
        }
        let (width, height) = terminal::size()?;
        let s = Size { width, height };
        self.size.set(Some(s));
        Ok(s)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        let w = terminal::window_size()?;
        Ok(WindowSize {
            columns_rows: Size {
                width: w.columns,
                height: w.rows,
            },
            pixels: Size {
                width: w.width,
                height: w.height,
            },
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.writer.write_all(&self.out)?;
            self.out.clear();
        }
        self.writer.flush()
    }
}

/// Terminal events read on a thread of their own (blocked in the kernel between keys), handed
/// to the event loop through a channel.
pub struct Input {
    rx: tokio::sync::mpsc::Receiver<io::Result<Event>>,
}

impl Input {
    /// Start the reader thread. It ends after a read error or once the receiver is gone (at the
    /// next event); a process that quits does not wait for it.
    pub fn spawn() -> io::Result<Input> {
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        std::thread::Builder::new()
            .name("gpulse-input".into())
            .spawn(move || loop {
                let event = crossterm::event::read();
                let failed = event.is_err();
                if tx.blocking_send(event).is_err() || failed {
                    break;
                }
            })?;
        Ok(Input { rx })
    }

    /// The next event; `None` once the reader has stopped.
    pub async fn next(&mut self) -> Option<io::Result<Event>> {
        self.rx.recv().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::CrosstermBackend;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    /// Cells in every style the dashboard uses and more: colours (named, indexed, RGB), each
    /// modifier on and off, wide characters, runs broken by unchanged cells.
    fn styled_buffers() -> (Buffer, Buffer) {
        let area = Rect::new(0, 0, 40, 6);
        let before = Buffer::empty(area);
        let mut after = Buffer::empty(area);
        let styles = [
            Style::new().fg(Color::Green),
            Style::new()
                .fg(Color::Indexed(208))
                .bg(Color::Rgb(10, 20, 30)),
            Style::new().add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD | Modifier::DIM),
            Style::new().add_modifier(Modifier::DIM),
            Style::new().add_modifier(Modifier::REVERSED | Modifier::ITALIC),
            Style::new().add_modifier(Modifier::UNDERLINED | Modifier::CROSSED_OUT),
            Style::new().add_modifier(Modifier::SLOW_BLINK | Modifier::HIDDEN),
            Style::new()
                .underline_color(Color::Red)
                .add_modifier(Modifier::UNDERLINED),
            Style::new(),
        ];
        for (i, style) in styles.iter().enumerate() {
            let y = (i % 6) as u16;
            let x = (i / 6) as u16 * 20;
            after.set_string(x, y, format!("▁▃▅█ {i} 全角"), *style);
        }
        (before, after)
    }

    /// What ratatui's crossterm backend writes for these updates.
    fn ratatuis(diff: &[(u16, u16, &Cell)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        CrosstermBackend::new(&mut bytes)
            .draw(diff.iter().map(|(x, y, c)| (*x, *y, *c)))
            .unwrap();
        bytes
    }

    #[test]
    fn frames_are_byte_identical_to_ratatuis_crossterm_backend() {
        let (before, after) = styled_buffers();
        let diff = before.diff(&after);
        let mut ours = TermBackend::new(Vec::new());
        ours.draw(diff.iter().map(|(x, y, c)| (*x, *y, *c)))
            .unwrap();
        let theirs = ratatuis(&diff);
        assert!(!ours.out.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&ours.out),
            String::from_utf8_lossy(&theirs)
        );
        // Back to plain: every attribute is removed again.
        let diff = after.diff(&before);
        let mut ours = TermBackend::new(Vec::new());
        ours.draw(diff.iter().map(|(x, y, c)| (*x, *y, *c)))
            .unwrap();
        assert_eq!(ours.out, ratatuis(&diff));
    }

    #[test]
    fn a_frame_leaves_in_one_write_on_flush() {
        struct Writes(Vec<usize>);
        impl Write for Writes {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.push(b.len());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        // A frame of 12 KiB: every cell its own colour.
        let area = Rect::new(0, 0, 160, 12);
        let before = Buffer::empty(area);
        let mut after = Buffer::empty(area);
        for y in 0..area.height {
            for x in 0..area.width {
                let c = Color::Indexed(((x + y) % 200) as u8);
                after[(x, y)].set_symbol("█").set_fg(c);
            }
        }
        let mut b = TermBackend::new(Writes(Vec::new()));
        let diff = before.diff(&after);
        b.draw(diff.iter().map(|(x, y, c)| (*x, *y, *c))).unwrap();
        b.hide_cursor().unwrap();
        let built = b.out.len();
        assert!(built > 12 * 1024, "{built} bytes");
        b.flush().unwrap();
        assert_eq!(b.writer.0, vec![built]);
        assert!(b.out.is_empty());
        // Nothing built: nothing written.
        b.flush().unwrap();
        assert_eq!(b.writer.0.len(), 1);
    }

    #[test]
    fn only_the_thread_that_entered_the_screen_may_restore_it() {
        set_owner(Some(std::thread::current().id()));
        assert!(!held_by_another_thread());
        let from_a_worker = std::thread::spawn(held_by_another_thread)
            .join()
            .expect("worker");
        assert!(from_a_worker, "a worker's panic leaves the screen alone");
        set_owner(None);
        let after_restore = std::thread::spawn(held_by_another_thread)
            .join()
            .expect("worker");
        assert!(
            !after_restore,
            "with no screen up, any thread's panic prints as usual"
        );
    }

    #[test]
    fn decimals_and_cursor_moves() {
        let mut out = Vec::new();
        move_to(&mut out, 0, 0);
        move_to(&mut out, 9, 99);
        move_to(&mut out, u16::MAX - 1, 1234);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "\x1b[1;1H\x1b[100;10H\x1b[1235;65535H"
        );
    }
}
