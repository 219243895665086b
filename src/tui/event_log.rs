//! The dashboard's event log: every `tracing` event at INFO and above (GPU lost or back, backend
//! errors, findings raised and cleared), kept with its time and level in a bounded ring that the
//! event panel reads. Each event has a sequence number, so a panel scrolled back stays on the same
//! events while new ones arrive.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer};

use crate::model::UnixTime;

/// Events kept; older ones are dropped.
pub const CAPACITY: usize = 1000;

/// One logged event.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    /// 0 for the first event of the process, then one more for each.
    pub seq: u64,
    pub t: UnixTime,
    pub level: tracing::Level,
    /// The message, then any other fields as `key=value`.
    pub text: String,
}

/// Events logged in this process so far.
static LOGGED: AtomicU64 = AtomicU64::new(0);
static EVENTS: Mutex<VecDeque<LoggedEvent>> = Mutex::new(VecDeque::new());

/// The layer that keeps events for the panel.
pub struct EventLayer;

impl<S: tracing::Subscriber> Layer<S> for EventLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut text = EventText::default();
        event.record(&mut text);
        push(*event.metadata().level(), text.finish());
    }
}

/// Keep one event (the layer's work; tests and tools may log directly).
pub fn push(level: tracing::Level, text: String) {
    let Ok(mut events) = EVENTS.lock() else {
        return;
    };
    // Numbered under the lock: the ring stays in order.
    let seq = LOGGED.fetch_add(1, Ordering::AcqRel);
    if events.len() >= CAPACITY {
        events.pop_front();
    }
    events.push_back(LoggedEvent {
        seq,
        t: crate::clock::now(),
        level,
        text,
    });
}

/// How many events have been logged (the panel is drawn again when this moves).
pub fn logged() -> u64 {
    LOGGED.load(Ordering::Acquire)
}

/// Sequence numbers of the oldest and newest events kept, if any.
pub fn bounds() -> Option<(u64, u64)> {
    let events = EVENTS.lock().ok()?;
    Some((events.front()?.seq, events.back()?.seq))
}

/// Up to `n` events ending with the one numbered `bottom` (the newest when `None`), oldest first.
/// Near the oldest event kept, the window moves down so that it stays full.
pub fn window(bottom: Option<u64>, n: usize) -> Vec<LoggedEvent> {
    let Ok(events) = EVENTS.lock() else {
        return Vec::new();
    };
    let Some(first) = events.front().map(|e| e.seq) else {
        return Vec::new();
    };
    let len = events.len();
    let end = bottom.map_or(len, |b| (b.saturating_sub(first) as usize + 1).min(len));
    let end = end.max(n.min(len));
    events.range(end.saturating_sub(n)..end).cloned().collect()
}

/// The words of an event: its message first, then its other fields.
#[derive(Default)]
struct EventText {
    message: String,
    fields: String,
}

impl EventText {
    fn finish(self) -> String {
        if self.fields.is_empty() {
            self.message
        } else if self.message.is_empty() {
            self.fields.trim_start().to_string()
        } else {
            self.message + &self.fields
        }
    }
}

impl Visit for EventText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_ends_at_its_bottom_and_stays_full_near_the_oldest() {
        for i in 0..5 {
            push(tracing::Level::INFO, format!("window test {i}"));
        }
        let (_, newest) = bounds().expect("events");
        let last = window(None, 3);
        assert_eq!(last.len(), 3);
        assert_eq!(last[2].seq, newest);
        assert!(last.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        let back = window(Some(newest - 1), 3);
        assert_eq!(back[2].seq, newest - 1);
        // Asking for more than is kept gives everything kept, oldest first.
        let all = window(Some(0), CAPACITY + 10);
        assert_eq!(all.last().map(|e| e.seq), Some(newest));
    }

    #[test]
    fn messages_come_first_then_other_fields() {
        let t = EventText {
            message: "GPU 0 lost".into(),
            fields: " reason=\"fell off\"".into(),
        };
        assert_eq!(t.finish(), "GPU 0 lost reason=\"fell off\"");
    }
}
