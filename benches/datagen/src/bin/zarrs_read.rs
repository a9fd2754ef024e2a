//! The in-process reference for zarrd's large-slice benchmark: reads a region of an array
//! with zarrs (`retrieve_array_subset`, default codec options, so decoding runs on all
//! cores through rayon), once to warm up and then N timed repetitions.
//!
//! `zarrs-read STORE_DIR ARRAY_PATH R0:R1,C0:C1 N [--out FILE] [--threads T] [--quiet]`
//! prints one line per repetition (unless `--quiet`) and a summary line
//! `zarrs-read: threads=… median_s=… best_s=… median_MBps=… cpu_per_read_s=… bytes=…`
//! (MB = 10^6 bytes; CPU = this process's user + system time over the timed reads, from
//! `/proc/self/stat`, divided by N). `--threads` sizes rayon's pool (1 = the single-thread
//! library cost of a read). `--out` writes the bytes read (for a bit-for-bit comparison with
//! zarrd's response); with N = 0 only the warm-up read is done.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn parse_region(s: &str) -> Result<Vec<Range<u64>>, Error> {
    s.split(',')
        .map(|item| {
            let (a, b) = item.split_once(':').ok_or("region items are START:STOP")?;
            Ok(a.parse()?..b.parse()?)
        })
        .collect()
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: zarrs-read STORE_DIR ARRAY_PATH R0:R1,C0:C1 N [--out FILE]".into());
    }
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    // Before zarrs touches rayon's global pool.
    if let Some(threads) = flag("--threads") {
        rayon::ThreadPoolBuilder::new().num_threads(threads.parse()?).build_global()?;
    }
    let store = Arc::new(FilesystemStore::new(&args[1])?);
    let path = format!("/{}", args[2].trim_start_matches('/'));
    let array = Array::open(store, &path)?;
    let subset = ArraySubset::new_with_ranges(&parse_region(&args[3])?);
    let reps: usize = args[4].parse()?;
    let out = flag("--out");
    let quiet = args.iter().any(|a| a == "--quiet");

    // Warm-up (page cache, allocator), also the bytes for --out.
    let first: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
    let first = first.into_fixed()?;
    let bytes = first.len();
    if let Some(out) = out {
        std::fs::write(out, &first)?;
    }
    drop(first);

    let mut times = Vec::with_capacity(reps);
    let cpu0 = zarrd_bench_datagen::process_cpu_seconds()?;
    for i in 0..reps {
        let t0 = Instant::now();
        let data: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(data.size(), bytes);
        std::hint::black_box(&data);
        drop(data);
        if !quiet {
            println!("rep {i}: {secs:.4} s, {:.0} MB/s", bytes as f64 / secs / 1e6);
        }
        times.push(secs);
    }
    let cpu = zarrd_bench_datagen::process_cpu_seconds()? - cpu0;
    if times.is_empty() {
        return Ok(());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "zarrs-read: threads={} median_s={median:.6} best_s={:.6} median_MBps={:.1} cpu_per_read_s={:.7} bytes={bytes}",
        rayon::current_num_threads(),
        times[0],
        bytes as f64 / median / 1e6,
        cpu / reps as f64
    );
    Ok(())
}
