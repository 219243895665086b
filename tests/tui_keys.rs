//! The dashboard's keys and modes through the public API: keys map to actions, actions change the
//! app's state (process table, signal dialog, replay controls), on snapshots from the real engine.

mod support;

use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use support::api::{
    map_key, Action, App, DialogStage, Focus, Overlay, ProcessIdentity, Scenario, Signal,
    SignalError, SignalSender, Signaller, SimRun, SortKey,
};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

/// Apply what a key asks for; panics when it asks for nothing.
fn press(app: &mut App, k: KeyEvent) -> Action {
    let a = map_key(k, app).unwrap_or_else(|| panic!("{k:?} does nothing"));
    app.apply(a);
    a
}

fn app(scenario: Scenario, gpus: u32) -> App {
    let mut run = SimRun::new(scenario, gpus);
    run.advance(10.0);
    let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
    app.live_log = false;
    app
}

#[test]
fn focus_moves_between_gpus_and_process_rows() {
    let mut a = app(Scenario::Mixed, 4);
    a.table.all_gpus = true;
    assert_eq!(press(&mut a, ch('P')), Action::ToggleFocus);
    assert_eq!(a.focus, Focus::Processes);
    let rows = a.process_rows();
    assert!(rows.len() >= 2, "{rows:?}");
    assert_eq!(press(&mut a, key(KeyCode::Down)), Action::RowNext);
    assert_eq!(a.table.selected_pid, Some(rows[1].pid));
    assert_eq!(a.selected, 0, "the GPU selection stays");
    assert_eq!(press(&mut a, ch('k')), Action::RowPrev);
    assert_eq!(a.table.selected_pid, Some(rows[0].pid));
    press(&mut a, ch('k'));
    assert_eq!(a.table.selected_pid, Some(rows[0].pid), "stops at the top");
    assert_eq!(press(&mut a, key(KeyCode::Esc)), Action::FocusGpus);
    assert_eq!(a.focus, Focus::Gpus);
    assert_eq!(press(&mut a, key(KeyCode::Down)), Action::SelectNext);
    assert_eq!(a.selected, 1);
}

#[test]
fn sort_keys_cycle_the_column_and_reverse_the_order() {
    let mut a = app(Scenario::Mixed, 4);
    a.table.all_gpus = true;
    assert_eq!(a.table.view.sort, SortKey::GpuMemory);
    assert!(a.table.view.descending);
    let mem: Vec<Option<u64>> = a
        .process_rows()
        .iter()
        .map(|r| r.gpu_memory_bytes)
        .collect();
    assert!(mem.windows(2).all(|w| w[0] >= w[1]), "{mem:?}");
    assert_eq!(press(&mut a, ch('s')), Action::SortNext);
    assert_eq!(a.table.view.sort, SortKey::SmUtil);
    assert_eq!(press(&mut a, ch('S')), Action::SortReverse);
    assert!(!a.table.view.descending);
    let sm: Vec<f64> = a.process_rows().iter().filter_map(|r| r.sm_util).collect();
    assert!(sm.windows(2).all(|w| w[0] <= w[1]), "{sm:?}");
    // Text columns start A-Z.
    while a.table.view.sort != SortKey::Command {
        press(&mut a, ch('s'));
    }
    assert!(!a.table.view.descending);
}

#[test]
fn the_filter_prompt_filters_while_typing_enter_keeps_and_escape_clears() {
    let mut a = app(Scenario::Mixed, 4);
    a.table.all_gpus = true;
    let all = a.process_rows().len();
    assert_eq!(press(&mut a, ch('/')), Action::OpenFilter);
    for c in "starvx".chars() {
        assert_eq!(press(&mut a, ch(c)), Action::FilterChar(c));
    }
    assert!(a.process_rows().is_empty());
    assert_eq!(
        press(&mut a, key(KeyCode::Backspace)),
        Action::FilterBackspace
    );
    // 'q' is text in the prompt, not quit.
    assert_eq!(map_key(ch('q'), &a), Some(Action::FilterChar('q')));
    let matching = a.process_rows();
    assert!(!matching.is_empty() && matching.len() < all, "{matching:?}");
    assert!(matching.iter().all(|r| r.command.contains("starv")));
    assert_eq!(press(&mut a, key(KeyCode::Enter)), Action::FilterApply);
    assert_eq!(a.table.view.filter, "starv");
    assert_eq!(a.table.prompt, None);
    assert_eq!(a.process_rows(), matching);
    press(&mut a, ch('/'));
    assert_eq!(press(&mut a, key(KeyCode::Esc)), Action::FilterClear);
    assert_eq!(a.table.view.filter, "");
    assert_eq!(a.process_rows().len(), all);
}

#[test]
fn tree_mode_shows_the_workers_under_their_gpu_process() {
    let mut a = app(Scenario::Starving, 1);
    let flat = a.process_rows();
    assert_eq!(flat.len(), 1);
    assert_eq!(press(&mut a, ch('t')), Action::ToggleTree);
    let tree = a.process_rows();
    assert!(tree.len() > 1, "{tree:?}");
    assert_eq!(tree[0].depth, 0);
    assert!(tree[1..].iter().all(|r| r.depth == 1 && r.state.is_some()));
    assert_eq!(press(&mut a, ch('a')), Action::ToggleAllGpus);
    assert!(a.table.all_gpus);
}

/// Records what the dialog asked for; refuses the PIDs it is told to.
#[derive(Debug, Default)]
struct FakeSender {
    refuse: Option<u32>,
    sent: Mutex<Vec<(u32, Signal)>>,
}

impl SignalSender for FakeSender {
    fn can_signal(&self, target: ProcessIdentity) -> Result<(), SignalError> {
        let pid = target.pid;
        match self.refuse {
            Some(p) if p == pid => Err(SignalError::NotPermitted {
                pid,
                owner: 0,
                you: 1000,
            }),
            _ => Ok(()),
        }
    }
    fn send(&self, target: ProcessIdentity, signal: Signal) -> Result<(), SignalError> {
        self.can_signal(target)?;
        self.sent.lock().expect("lock").push((target.pid, signal));
        Ok(())
    }
}

#[test]
fn confirming_the_dialog_sends_term_then_kill_to_the_selected_pid() {
    let mut a = app(Scenario::Mixed, 4);
    a.table.all_gpus = true;
    let sender = Arc::new(FakeSender::default());
    a.signaller = sender.clone();
    press(&mut a, ch('P'));
    press(&mut a, key(KeyCode::Down));
    let pid = a.process_rows()[1].pid;
    assert_eq!(press(&mut a, ch('K')), Action::OpenSignalDialog);
    let d = a.dialog.clone().expect("dialog open");
    assert_eq!(d.stage, DialogStage::Confirm(Signal::Term));
    assert!(
        d.message()
            .starts_with(&format!("Send SIGTERM to PID {pid} (python train.py")),
        "{}",
        d.message()
    );
    assert!(d.message().ends_with("? [y/N]"));
    assert!(
        sender.sent.lock().expect("lock").is_empty(),
        "nothing before y"
    );
    assert_eq!(press(&mut a, ch('y')), Action::DialogYes);
    assert_eq!(
        a.dialog.as_ref().map(|d| &d.stage),
        Some(&DialogStage::TermSent)
    );
    assert_eq!(press(&mut a, ch('K')), Action::DialogKill);
    assert_eq!(
        a.dialog.as_ref().map(|d| &d.stage),
        Some(&DialogStage::Confirm(Signal::Kill))
    );
    press(&mut a, ch('y'));
    assert!(a.dialog.is_none(), "closes after KILL");
    assert_eq!(
        *sender.sent.lock().expect("lock"),
        vec![(pid, Signal::Term), (pid, Signal::Kill)]
    );
}

#[test]
fn any_other_key_cancels_and_sends_nothing() {
    let mut a = app(Scenario::Healthy, 1);
    let sender = Arc::new(FakeSender::default());
    a.signaller = sender.clone();
    press(&mut a, key(KeyCode::F(9)));
    assert!(a.dialog.is_some());
    // Enter (the default answer, N) and q close the dialog; q does not quit from it.
    assert_eq!(map_key(ch('q'), &a), Some(Action::DialogClose));
    assert_eq!(press(&mut a, key(KeyCode::Enter)), Action::DialogClose);
    assert!(a.dialog.is_none());
    assert!(!a.quit);
    assert!(sender.sent.lock().expect("lock").is_empty());
}

#[test]
fn a_process_that_may_not_be_signalled_is_refused_with_the_reason() {
    let mut a = app(Scenario::Healthy, 1);
    let pid = a.process_rows()[0].pid;
    let sender = Arc::new(FakeSender {
        refuse: Some(pid),
        ..Default::default()
    });
    a.signaller = sender.clone();
    press(&mut a, ch('K'));
    let d = a.dialog.clone().expect("dialog");
    assert!(matches!(d.stage, DialogStage::Refused(_)), "{d:?}");
    assert!(
        d.message().contains("only its owner or root"),
        "{}",
        d.message()
    );
    press(&mut a, ch('y'));
    assert!(a.dialog.is_none());
    assert!(sender.sent.lock().expect("lock").is_empty());
}

#[test]
fn simulated_processes_are_refused_by_the_real_signaller() {
    // App::new builds the real Signaller for the snapshot's backend ("sim").
    let mut a = app(Scenario::Healthy, 1);
    press(&mut a, ch('K'));
    let msg = a.dialog.as_ref().expect("dialog").message();
    assert!(msg.contains("belongs to the sim backend"), "{msg}");
    a.signaller = Arc::new(Signaller::new("nvml", true));
    press(&mut a, key(KeyCode::Esc));
    press(&mut a, ch('K'));
    let msg = a.dialog.as_ref().expect("dialog").message();
    assert!(msg.contains("--readonly"), "{msg}");
}

#[test]
fn record_key_asks_the_event_loop_to_toggle_recording() {
    let a = app(Scenario::Healthy, 1);
    assert_eq!(map_key(ch('r'), &a), Some(Action::ToggleRecord));
}

#[test]
fn replay_keys_do_nothing_on_live_data() {
    let a = app(Scenario::Healthy, 1);
    for c in ['1', '2', '0', '[', ']', 'n', '<', '>'] {
        assert_eq!(map_key(ch(c), &a), None, "{c}");
    }
    // On live data ← → scroll the process table's commands instead of seeking.
    assert_eq!(map_key(key(KeyCode::Left), &a), Some(Action::ScrollLeft));
}

#[test]
fn l_opens_the_ledger_and_l_or_esc_closes_it() {
    let mut a = app(Scenario::Mixed, 4);
    assert_eq!(press(&mut a, ch('L')), Action::ToggleLedger);
    assert_eq!(a.overlay, Some(Overlay::Ledger));
    // While it is open the arrows and page keys scroll it, not the GPUs.
    assert_eq!(press(&mut a, key(KeyCode::Down)), Action::ScrollLedger(1));
    assert_eq!(a.ledger_scroll.first, 1);
    assert_eq!(a.selected, 0, "the GPU selection stays");
    assert_eq!(press(&mut a, key(KeyCode::Up)), Action::ScrollLedger(-1));
    assert_eq!(press(&mut a, key(KeyCode::PageDown)), Action::PageLedger(1));
    assert!(a.ledger_scroll.first > 1);
    assert_eq!(press(&mut a, key(KeyCode::PageUp)), Action::PageLedger(-1));
    assert_eq!(a.ledger_scroll.first, 0);
    // Keys of the dashboard behind it do nothing.
    assert_eq!(map_key(ch('P'), &a), None);
    assert_eq!(map_key(ch('K'), &a), None);
    assert_eq!(press(&mut a, ch('L')), Action::ToggleLedger);
    assert_eq!(a.overlay, None);
    press(&mut a, ch('L'));
    assert_eq!(press(&mut a, key(KeyCode::Esc)), Action::ToggleLedger);
    assert_eq!(a.overlay, None);
    // q quits from it.
    press(&mut a, ch('L'));
    assert_eq!(press(&mut a, ch('q')), Action::Quit);
    assert!(a.quit);
}

#[test]
fn l_opens_the_log_view_its_keys_go_to_it_and_l_or_esc_closes_it() {
    let mut a = app(Scenario::Mixed, 4);
    assert_eq!(press(&mut a, ch('l')), Action::ToggleLog);
    assert_eq!(a.overlay, Some(Overlay::Log));
    // While it is open the arrows and page keys are the view's own, not the GPUs'.
    assert!(matches!(
        press(&mut a, key(KeyCode::Down)),
        Action::LogKey(_)
    ));
    assert_eq!(a.selected, 0, "the GPU selection stays");
    assert!(matches!(
        press(&mut a, key(KeyCode::PageUp)),
        Action::LogKey(_)
    ));
    assert!(matches!(press(&mut a, ch('h')), Action::LogKey(_)));
    assert_eq!(
        a.overlay,
        Some(Overlay::Log),
        "h hides targets, not opens help"
    );
    // Keys of the dashboard behind it do nothing.
    assert_eq!(map_key(ch('P'), &a), None);
    assert_eq!(map_key(ch('K'), &a), None);
    assert_eq!(press(&mut a, ch('l')), Action::ToggleLog);
    assert_eq!(a.overlay, None);
    press(&mut a, ch('l'));
    assert_eq!(press(&mut a, key(KeyCode::Esc)), Action::ToggleLog);
    assert_eq!(a.overlay, None);
    press(&mut a, ch('l'));
    assert_eq!(press(&mut a, ch('q')), Action::Quit);
    assert!(a.quit);
}
