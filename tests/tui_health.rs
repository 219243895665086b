//! Health on the dashboard, from the `faulty` scenario through the real engine: a mark beside
//! each sick GPU in the list, and the health lines first in the details column, at 80×24 too.

mod support;

use support::api::{Action, Scenario};
use support::screen::{dashboard, screen, sim_on_16_cores};

#[test]
fn sick_gpus_are_marked_in_the_list_at_80x24() {
    let run = sim_on_16_cores(Scenario::Faulty, 4, 90.0);
    let app = dashboard(run.snapshot(), false);
    let s = screen(&app, 80, 24);
    let row = |i: u32| {
        s.lines()
            .find(|l| l.contains(&format!("{i} H200")))
            .unwrap_or_else(|| panic!("row of GPU {i}:\n{s}"))
            .to_string()
    };
    assert!(row(0).contains("▶✗ 0 H200"), "a fault: {}", row(0));
    assert!(row(0).contains("LOST"), "{}", row(0));
    assert!(row(1).contains(" ! 1 H200"), "a warning: {}", row(1));
    assert!(
        row(2).contains("   2 H200"),
        "throttled, not sick: {}",
        row(2)
    );
    assert!(row(3).contains("   3 H200"), "{}", row(3));
    insta::assert_snapshot!("faulty_80x24", s);
}

#[test]
fn details_show_the_health_first_at_80x24() {
    let run = sim_on_16_cores(Scenario::Faulty, 4, 90.0);
    let mut app = dashboard(run.snapshot(), false);
    app.apply(Action::SelectNext);
    app.apply(Action::ToggleExpand);
    let s = screen(&app, 80, 24);
    assert!(s.contains("health    warn"), "{s}");
    assert!(s.contains("·         XID 63 at 12:00"), "{s}");
    assert!(s.contains("remap pending"), "{s}");
    insta::assert_snapshot!("faulty_details_80x24", s);

    // The throttled GPU: the time its clocks were held, measured.
    app.apply(Action::SelectNext);
    let s = screen(&app, 120, 40);
    assert!(s.contains("health    ok"), "{s}");
    assert!(s.contains("NVLink 18/18 up"), "{s}");
    assert!(s.contains("held      HW thermal 100%"), "{s}");
}
