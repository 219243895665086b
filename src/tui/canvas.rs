//! A screen drawn in parts, each drawn again only when what it shows has changed.
//!
//! A frame drawn whole touches every cell of the screen three times: the buffer is cleared, every
//! widget draws into it, and it is compared with the last frame to find what to send. At 160×48
//! that is 7,680 cells of 48 bytes, and after 250 ms of sleep on a busy host they are no longer in
//! the processor's caches: most of a frame's cost. Yet between two snapshots most of the screen
//! is unchanged (the detector, events and process panels change about once a second, a GPU's
//! memory chart only when its memory moves), and the charts that do move are a third of it.
//!
//! So the screen is drawn on a [`Canvas`] in parts that do not overlap, each given a key: a hash
//! of everything it draws (the ratatui values it renders, which are a function of nothing else)
//! or `None` for a part that changes every frame. [`PartsTerminal`] keeps each part's last cells
//! and, for a part whose key and place are those of the last frame, neither draws nor compares
//! it: a frame costs what its changed parts cost. When the parts themselves change (a resize, an
//! overlay, a panel that grows) the screen is cleared and every part sent whole, as a resized
//! ratatui terminal does. A [`Buffer`] is a canvas on which every part is drawn: the screen tests
//! and tools draw there, and a test compares the two frame after frame.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Rect, Size};
use ratatui::widgets::{Block, Widget};

/// Where a screen is drawn.
pub trait Canvas {
    /// Draw one part of the screen: `draw` draws it at its place (inside `area`, which no other
    /// part of the frame overlaps), `key` is a hash of everything it draws there, or `None` when
    /// it changes every frame. `name` tells parts apart with their area.
    fn part(
        &mut self,
        name: &'static str,
        area: Rect,
        key: Option<u64>,
        draw: &mut dyn FnMut(&mut Buffer),
    );

    /// Whether every part is drawn on one buffer of the whole screen (each part at its place,
    /// nothing kept).
    fn draws_everything(&self) -> bool {
        false
    }
}

/// Every part is drawn.
impl Canvas for Buffer {
    fn part(
        &mut self,
        _name: &'static str,
        _area: Rect,
        _key: Option<u64>,
        draw: &mut dyn FnMut(&mut Buffer),
    ) {
        draw(self);
    }

    fn draws_everything(&self) -> bool {
        true
    }
}

/// The key of a part that draws `value` (and nothing else).
pub fn key_of(value: &impl Hash) -> Option<u64> {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    Some(h.finish())
}

/// A bordered block whose inside other parts fill: its four edges are parts of their own, so
/// the block is drawn again only when its title or style changes. The inside is left as the
/// block leaves it (blank): blocks drawn this way must have no style of their own.
pub fn block(canvas: &mut dyn Canvas, name: &'static str, area: Rect, block: &Block) {
    let key = key_of(&(block, area));
    if canvas.draws_everything() {
        canvas.part(name, area, key, &mut |buf| block.render(area, buf));
        return;
    }
    let inner = block.inner(area);
    let edges = [
        Rect::new(area.x, area.y, area.width, inner.y - area.y),
        Rect::new(
            area.x,
            inner.bottom(),
            area.width,
            area.bottom() - inner.bottom(),
        ),
        Rect::new(area.x, inner.y, inner.x - area.x, inner.height),
        Rect::new(
            inner.right(),
            inner.y,
            area.right() - inner.right(),
            inner.height,
        ),
    ];
    for edge in edges.into_iter().filter(|e| !e.is_empty()) {
        canvas.part(name, edge, key, &mut |buf| {
            let mut whole = Buffer::empty(area);
            block.render(area, &mut whole);
            copy_cells(&whole, buf);
        });
    }
}

/// Copy the cells of `from` that lie within `to` into the same places of `to`.
fn copy_cells(from: &Buffer, to: &mut Buffer) {
    let a = from.area.intersection(to.area);
    if a.is_empty() {
        return;
    }
    let w = usize::from(a.width);
    for y in a.top()..a.bottom() {
        let (s, d) = (from.index_of(a.x, y), to.index_of(a.x, y));
        to.content[d..d + w].clone_from_slice(&from.content[s..s + w]);
    }
}

/// A part as last drawn: its name, key and cells (their area is its place), and the buffer its
/// next drawing goes into (each part keeps two, as a terminal keeps two frames: no allocation
/// from frame to frame).
struct Kept {
    name: &'static str,
    key: Option<u64>,
    cells: Buffer,
    next: Buffer,
}

/// A terminal that keeps the parts of the last frame and sends only what changed in the parts
/// drawn again (see the module's notes).
pub struct PartsTerminal<B: Backend> {
    backend: B,
    /// The screen size the kept parts were drawn for; `None` before the first frame.
    size: Option<Size>,
    kept: Vec<Kept>,
    /// A blank buffer the size of a part, for sending parts whole.
    blank: Buffer,
    /// Parts drawn (not kept) in the last frame, and in all frames so far.
    drawn_last: usize,
    drawn_total: u64,
}

/// A part drawn in this frame: the kept part it replaces, if any, and its new cells.
struct Drawn {
    replaces: Option<usize>,
    name: &'static str,
    key: Option<u64>,
    cells: Buffer,
}

/// The canvas of one frame of a [`PartsTerminal`].
struct PartsFrame<'t> {
    screen: Rect,
    kept: &'t mut [Kept],
    /// Per kept part: it is in this frame (kept as it is, or drawn again).
    present: Vec<bool>,
    drawn: Vec<Drawn>,
}

impl Canvas for PartsFrame<'_> {
    fn part(
        &mut self,
        name: &'static str,
        area: Rect,
        key: Option<u64>,
        draw: &mut dyn FnMut(&mut Buffer),
    ) {
        let area = area.intersection(self.screen);
        if area.is_empty() {
            return;
        }
        let found = self
            .kept
            .iter()
            .enumerate()
            .position(|(i, k)| !self.present[i] && k.name == name && k.cells.area == area);
        if let Some(i) = found {
            self.present[i] = true;
            if key.is_some() && self.kept[i].key == key {
                return;
            }
        }
        let mut cells = match found {
            Some(i) => std::mem::take(&mut self.kept[i].next),
            None => Buffer::default(),
        };
        cells.resize(area);
        cells.reset();
        draw(&mut cells);
        self.drawn.push(Drawn {
            replaces: found,
            name,
            key,
            cells,
        });
    }
}

impl<B: Backend> PartsTerminal<B> {
    pub fn new(backend: B) -> Self {
        PartsTerminal {
            backend,
            size: None,
            kept: Vec::new(),
            blank: Buffer::default(),
            drawn_last: 0,
            drawn_total: 0,
        }
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// Forget what is on screen: the next frame clears it and draws and sends every part, as
    /// after a resize.
    pub fn forget(&mut self) {
        self.size = None;
    }

    /// Parts drawn (not kept from the last frame) in the last frame, and in every frame so far.
    pub fn parts_drawn(&self) -> (usize, u64) {
        (self.drawn_last, self.drawn_total)
    }

    /// Draw a frame: `render` draws the screen (its whole area) on the canvas in parts. What
    /// changed is sent to the backend, then the cursor is hidden and the backend flushed, as
    /// ratatui's terminal does.
    pub fn draw(&mut self, render: impl FnOnce(Rect, &mut dyn Canvas)) -> Result<(), B::Error> {
        let size = self.backend.size()?;
        let screen = Rect::new(0, 0, size.width, size.height);
        if self.size != Some(size) {
            // Nothing kept is where it was.
            self.kept.clear();
        }
        let mut frame = PartsFrame {
            screen,
            present: vec![false; self.kept.len()],
            kept: &mut self.kept,
            drawn: Vec::new(),
        };
        render(screen, &mut frame);
        let PartsFrame { present, drawn, .. } = frame;
        self.drawn_last = drawn.len();
        self.drawn_total += drawn.len() as u64;
        let same_parts = self.size == Some(size)
            && present.iter().all(|&p| p)
            && drawn.iter().all(|d| d.replaces.is_some());
        if same_parts {
            for d in drawn {
                let Some(i) = d.replaces else { continue };
                let kept = &mut self.kept[i];
                self.backend.draw(kept.cells.diff(&d.cells).into_iter())?;
                kept.next = std::mem::replace(&mut kept.cells, d.cells);
                kept.key = d.key;
            }
        } else {
            self.redraw_all(present, drawn)?;
            self.size = Some(size);
        }
        self.backend.hide_cursor()?;
        Backend::flush(&mut self.backend)
    }

    /// The parts changed: clear the screen and send every part of this frame whole.
    fn redraw_all(&mut self, present: Vec<bool>, drawn: Vec<Drawn>) -> Result<(), B::Error> {
        let mut parts = Vec::with_capacity(present.len() + drawn.len());
        let mut replaced = vec![false; self.kept.len()];
        for d in &drawn {
            if let Some(i) = d.replaces {
                replaced[i] = true;
            }
        }
        let mut next = Vec::with_capacity(drawn.len());
        for (i, k) in std::mem::take(&mut self.kept).into_iter().enumerate() {
            if present[i] && !replaced[i] {
                parts.push(k);
            } else if present[i] {
                next.push((i, k.cells));
            }
        }
        for d in drawn {
            // A part drawn again keeps its old cells as the buffer of its next drawing.
            let spare = d
                .replaces
                .and_then(|i| next.iter().position(|(j, _)| *j == i))
                .map(|at| next.swap_remove(at).1);
            parts.push(Kept {
                name: d.name,
                key: d.key,
                cells: d.cells,
                next: spare.unwrap_or_default(),
            });
        }
        self.backend.clear()?;
        for p in &parts {
            self.blank.resize(p.cells.area);
            self.blank.reset();
            self.backend.draw(self.blank.diff(&p.cells).into_iter())?;
        }
        self.kept = parts;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::text::Line;
    use ratatui::widgets::{Borders, Paragraph};

    fn screen(canvas: &mut dyn Canvas, area: Rect, left: &str, right: &str, framed: bool) {
        let half = area.width / 2;
        let l = Rect::new(area.x, area.y, half, area.height);
        let r = Rect::new(area.x + half, area.y, area.width - half, area.height);
        let p = Paragraph::new(Line::from(left.to_string()));
        canvas.part("left", l, key_of(&p), &mut |buf| (&p).render(l, buf));
        if framed {
            let b = Block::default().borders(Borders::ALL).title("frame");
            block(canvas, "frame", r, &b);
            let inner = b.inner(r);
            let p = Paragraph::new(right.to_string());
            canvas.part("inside", inner, key_of(&p), &mut |buf| {
                (&p).render(inner, buf)
            });
        } else {
            let p = Paragraph::new(right.to_string());
            canvas.part("right", r, None, &mut |buf| (&p).render(r, buf));
        }
    }

    fn whole(w: u16, h: u16, left: &str, right: &str, framed: bool) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        let area = buf.area;
        screen(&mut buf, area, left, right, framed);
        buf
    }

    #[test]
    fn the_terminal_shows_what_a_whole_drawing_gives_and_keeps_unchanged_parts() {
        let mut term = PartsTerminal::new(TestBackend::new(30, 5));
        let frames = [
            ("a", "b", true),
            ("a", "b", true),
            ("a", "c", true),
            ("x", "c", true),
            ("x", "c", false),
            ("x", "d", false),
            ("x", "d", true),
        ];
        let mut drawn = Vec::new();
        for (l, r, framed) in frames {
            term.draw(|area, canvas| screen(canvas, area, l, r, framed))
                .expect("draw");
            assert_eq!(
                term.backend().buffer(),
                &whole(30, 5, l, r, framed),
                "{l} {r} {framed}"
            );
            drawn.push(term.parts_drawn().0);
        }
        // First frame: left, four edges, inside. Then nothing; the inside; the left; a new
        // layout: the right (the left is sent again from its kept cells); the right only (no
        // key); a new layout again: the frame's edges and inside.
        assert_eq!(drawn, [6, 0, 1, 1, 1, 1, 5]);

        term.backend_mut().resize(20, 4);
        term.draw(|area, canvas| screen(canvas, area, "x", "d", true))
            .expect("draw");
        assert_eq!(term.backend().buffer(), &whole(20, 4, "x", "d", true));
    }
}
