//! Unit tests of the virtual clock's conversion of records to simulated time.

use super::*;

fn streamed(first_iter: u64, last_iter: u64, tokens: u64) -> RequestRecord {
    let mut r = RequestRecord::new(0, Phase::Measure, 5.0);
    r.finish(6.0, tokens, Some("length".into()));
    r.server = Some(ServerTimes {
        arrival_s: Some(1.0),
        first_scheduled_s: Some(1.0),
        first_token_s: Some(1.5),
        last_token_s: Some(1.5 + 0.01 * (tokens - 1) as f64),
        first_iter: Some(first_iter),
        last_iter: Some(last_iter),
    });
    r
}

#[test]
fn a_gap_in_the_iterations_is_not_papered_over() {
    let latencies: BTreeMap<u64, f64> = (0..10).map(|i| (i, 10.0)).collect();
    let (ok, unmapped) = to_simulated_time(vec![streamed(2, 5, 4)], &latencies);
    assert_eq!(unmapped, 0);
    assert_eq!(ok[0].chunks.len(), 4);
    assert!((ok[0].tpot_s().unwrap() - 0.01).abs() < 1e-9);
    // Four tokens over five iterations (a pause): one response for the decode, counted.
    let (paused, unmapped) = to_simulated_time(vec![streamed(2, 6, 4)], &latencies);
    assert_eq!(unmapped, 1);
    assert_eq!(paused[0].chunks.len(), 2);
    assert!((paused[0].e2el_s().unwrap() - 0.53).abs() < 1e-9);
    // A lost iteration.
    let mut holes = latencies.clone();
    holes.remove(&4);
    assert_eq!(to_simulated_time(vec![streamed(2, 5, 4)], &holes).1, 1);
}

#[test]
fn refused_requests_keep_their_error() {
    let mut r = RequestRecord::new(0, Phase::Measure, 0.3);
    r.fail(0.31, "prompt too long");
    let (v, unmapped) = to_simulated_time(vec![r, streamed(0, 1, 2)], &BTreeMap::from([(1, 10.0)]));
    assert_eq!(unmapped, 0);
    assert_eq!(v[0].error.as_deref(), Some("prompt too long"));
    assert_eq!((v[0].send_s, v[0].end_s), (0.0, Some(0.0)));
    assert_eq!(v[1].send_s, 0.0, "times count from the earliest arrival");
}
