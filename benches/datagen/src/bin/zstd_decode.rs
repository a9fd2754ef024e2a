//! The codec's own cost for the cold-tile benchmark: decompresses one stored zstd frame
//! (the hot tile's inner chunk as zarrd's `/v1/chunk` returns it) N times on one thread
//! with a reused context, the cheapest way the zstd library can do it.
//!
//! `zstd-decode FRAME_FILE EXPECTED_FILE N` checks the output against EXPECTED_FILE (the
//! tile's decoded bytes) and prints `zstd-decode: reps=… cpu_per_decode_s=… wall_per_decode_s=… bytes=…`.

use std::time::Instant;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        return Err("usage: zstd-decode FRAME_FILE EXPECTED_FILE N".into());
    }
    let frame = std::fs::read(&args[1])?;
    let expected = std::fs::read(&args[2])?;
    let reps: usize = args[3].parse()?;
    let mut ctx = zstd::bulk::Decompressor::new()?;
    let mut out = vec![0u8; expected.len()];
    let n = ctx.decompress_to_buffer(&frame, &mut out)?;
    if out[..n] != expected[..] {
        return Err("the frame does not decode to the expected bytes".into());
    }
    let cpu0 = zarrd_bench_datagen::process_cpu_seconds()?;
    let t0 = Instant::now();
    for _ in 0..reps {
        let n = ctx.decompress_to_buffer(std::hint::black_box(&frame), &mut out)?;
        std::hint::black_box(&out[..n]);
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = zarrd_bench_datagen::process_cpu_seconds()? - cpu0;
    println!(
        "zstd-decode: reps={reps} cpu_per_decode_s={:.7} wall_per_decode_s={:.7} bytes={}",
        cpu / reps as f64,
        wall / reps as f64,
        expected.len()
    );
    Ok(())
}
