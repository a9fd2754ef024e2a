//! Helpers shared by the benchmark's reference tools.

/// This process's user + system CPU time so far, in seconds, from `/proc/self/stat`
/// (clock ticks of 1/100 s on Linux: measure enough repetitions that this is fine-grained).
pub fn process_cpu_seconds() -> Result<f64, Box<dyn std::error::Error + Send + Sync>> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').ok_or("unexpected /proc/self/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11).ok_or("no utime")?.parse::<f64>()? + fields.get(12).ok_or("no stime")?.parse::<f64>()?;
    Ok(ticks / 100.0)
}
