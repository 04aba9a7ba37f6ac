//! Classes each LoRA request of a bench run as a device-cache hit or miss by replaying the device
//! adapter cache from what any executor reports, not from simulator internals.
//!
//! TensorRT-LLM says nothing per request about its adapter caches, but every request's
//! `RequestPerfMetrics` carries `firstScheduledTime` and `lastTokenTime`, and the cache's rules
//! are known: an adapter is brought into the device cache when the scheduler first starts a
//! request that uses it, stays pinned while any request using it is in flight, and otherwise
//! leaves least recently used first when room is needed. Replaying those rules over the requests'
//! start and end stamps (ends before starts at equal times: a finished request releases its
//! adapter before the next iteration is scheduled) says which requests found their adapter on the
//! device. The replay's totals can be checked against the simulator's own counters.

use crate::bench::metrics::record::RequestRecord;

/// What the replay needs to know about the device cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceCacheModel {
    /// The device cache's capacity, bytes.
    pub capacity_bytes: f64,
    /// Bytes of one adapter (every synthetic adapter has the same size).
    pub adapter_bytes: f64,
}

impl DeviceCacheModel {
    /// Adapters the cache holds at once (at least one: larger adapters are refused on enqueue).
    pub fn slots(&self) -> usize {
        ((self.capacity_bytes / self.adapter_bytes.max(1.0)).floor() as usize).max(1)
    }
}

/// The replay's verdict on each request and its totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceReplay {
    /// Per record (same order as the input): `Some(true)` hit, `Some(false)` miss, `None` when the
    /// request had no adapter or never started (no `firstScheduledTime`).
    pub hit: Vec<Option<bool>>,
    /// Requests whose adapter was on the device when they started.
    pub hits: u64,
    /// Requests whose adapter had to be copied to the device.
    pub misses: u64,
    /// Adapters evicted to make room.
    pub evictions: u64,
}

/// Replays the device cache over `records` (all of a point's requests, warmup included: they fill
/// the cache the measured requests find).
pub fn replay(model: DeviceCacheModel, records: &[RequestRecord]) -> DeviceReplay {
    // (time, is_start, tie-break, record index): ends sort before starts at the same time.
    let mut events: Vec<(f64, bool, f64, usize)> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let (Some(_), Some(server)) = (r.lora_task, r.server.as_ref()) else { continue };
        let Some(start) = server.first_scheduled_s else { continue };
        let end = server.last_token_s.or(r.end_s).unwrap_or(f64::INFINITY).max(start);
        events.push((start, true, r.send_s, i));
        events.push((end, false, r.send_s, i));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)).then(a.3.cmp(&b.3)));

    let slots = model.slots();
    let mut out = DeviceReplay { hit: vec![None; records.len()], ..DeviceReplay::default() };
    // Adapters on the device, least recently used first, with the requests in flight using each.
    let mut cache: Vec<(u64, u32)> = Vec::new();
    for (_, is_start, _, i) in events {
        let Some(task) = records[i].lora_task else { continue };
        let position = cache.iter().position(|(t, _)| *t == task);
        if !is_start {
            if let Some(p) = position {
                cache[p].1 = cache[p].1.saturating_sub(1);
            }
            continue;
        }
        let pins = match position {
            Some(p) => {
                out.hits += 1;
                out.hit[i] = Some(true);
                cache.remove(p).1
            }
            None => {
                out.misses += 1;
                out.hit[i] = Some(false);
                // Evict unpinned adapters, least recently used first, until there is a free slot.
                while cache.len() >= slots {
                    let Some(victim) = cache.iter().position(|(_, pins)| *pins == 0) else { break };
                    cache.remove(victim);
                    out.evictions += 1;
                }
                0
            }
        };
        cache.push((task, pins + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Phase;
    use crate::bench::metrics::record::ServerTimes;

    fn record(index: u64, task: u64, start: f64, end: f64) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, 0.0);
        r.lora_task = Some(task);
        r.server =
            Some(ServerTimes { first_scheduled_s: Some(start), last_token_s: Some(end), ..ServerTimes::default() });
        r
    }

    #[test]
    fn adapters_in_flight_stay_and_the_least_recently_used_idle_one_goes() {
        let model = DeviceCacheModel { capacity_bytes: 2.5, adapter_bytes: 1.0 };
        assert_eq!(model.slots(), 2);
        let records = vec![
            record(0, 1, 0.0, 10.0),  // miss; 1 stays pinned until 10
            record(1, 2, 1.0, 2.0),   // miss
            record(2, 2, 3.0, 4.0),   // hit
            record(3, 3, 5.0, 6.0),   // miss: evicts 2 (1 is in flight although older)
            record(4, 1, 7.0, 8.0),   // hit: 1 was never evicted
            record(5, 2, 10.0, 11.0), // miss: 2 was evicted; 1 ended at 10 first, so 3 goes
        ];
        let replay = replay(model, &records);
        assert_eq!(replay.hit, [Some(false), Some(false), Some(true), Some(false), Some(true), Some(false)]);
        assert_eq!((replay.hits, replay.misses, replay.evictions), (2, 4, 2));
    }

    #[test]
    fn requests_without_an_adapter_or_a_start_are_not_classed() {
        let model = DeviceCacheModel { capacity_bytes: 1.0, adapter_bytes: 1.0 };
        let mut never_started = record(1, 1, 0.0, 1.0);
        never_started.server.as_mut().unwrap().first_scheduled_s = None;
        let mut base = record(2, 1, 0.0, 1.0);
        base.lora_task = None;
        let replay = replay(model, &[record(0, 1, 0.0, 1.0), never_started, base]);
        assert_eq!(replay.hit, [Some(false), None, None]);
    }
}
