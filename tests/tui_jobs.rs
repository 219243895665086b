//! The dashboard on a shared node (`Scenario::Shared`): the JOB column and the filter by job, the
//! diagnosis line naming the job, and a MIG GPU's instances as rows under it.

mod support;

use support::api::{Action, Scenario, SimRun};
use support::screen::{dashboard, screen};

fn shared(seconds: f64) -> SimRun {
    let mut run = SimRun::new(Scenario::Shared, 4);
    run.advance(seconds);
    run
}

#[test]
fn the_process_table_has_a_job_column_and_filters_by_job() {
    let run = shared(60.0);
    let mut a = dashboard(run.snapshot(), false);
    a.apply(Action::ToggleAllGpus);
    a.apply(Action::ToggleFocus);
    let s = screen(&a, 140, 44);
    assert!(s.contains("JOB"), "{s}");
    for job in [
        "pod train-7f9c/ml-team",
        "pod infer-2/serving",
        "docker web-3",
        "slurm 4242 train-llm",
        "pod eval-5/ml-team",
        "slurm 4243 tune-lr",
        "docker notebook",
    ] {
        assert!(s.contains(job), "{job}: {s}");
    }
    insta::assert_snapshot!("shared_processes_140x44", s);
    // `job:` filters by the job alone: both pods of ml-team, on GPU 0 and in GPU 3's MIG.
    a.apply(Action::OpenFilter);
    for c in "job:ml-team".chars() {
        a.apply(Action::FilterChar(c));
    }
    a.apply(Action::FilterApply);
    let s = screen(&a, 140, 44);
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("python ")).collect();
    assert_eq!(rows.len(), 2, "{s}");
    assert!(rows.iter().all(|l| l.contains("ml-team")), "{s}");
}

#[test]
fn the_diagnosis_names_the_job_and_mig_instances_are_rows_under_their_gpu() {
    let run = shared(90.0);
    let a = dashboard(run.snapshot(), false);
    let s = screen(&a, 140, 44);
    assert!(
        s.contains("GPU 0 pod train-7f9c/ml-team: input starvation"),
        "{s}"
    );
    let list: Vec<&str> = s.lines().filter(|l| l.contains("└ MIG")).collect();
    assert_eq!(list.len(), 3, "{s}");
    assert!(list[0].contains("1/0 3g.71gb pod eval-5/ml-team"), "{s}");
    assert!(list[1].contains("2/0 2g.35gb slurm 4243 tune-lr"), "{s}");
    assert!(list[2].contains("3/0 1g.18gb docker notebook"), "{s}");
    assert!(list.iter().all(|l| l.contains(" SM ")), "{s}");
    insta::assert_snapshot!("shared_dashboard_140x44", s);
}

#[test]
fn the_ledger_view_lists_jobs_beside_processes_and_users() {
    let run = shared(90.0);
    let a = dashboard(run.snapshot(), false);
    let s = support::screen::ledger_view(&a, 120, 60);
    let at = s.find("Jobs, most lost first").expect("a jobs section");
    let jobs = &s[at..];
    // The starving pod loses the most; every job of the node is listed once.
    let first = jobs.lines().nth(2).expect("a first job row");
    assert!(first.contains("pod train-7f9c/ml-team"), "{jobs}");
    for job in [
        "slurm 4242 train-llm",
        "docker notebook",
        "docker web-3",
        "pod eval-5/ml-team",
    ] {
        assert_eq!(jobs.matches(job).count(), 1, "{job}: {jobs}");
    }
}
