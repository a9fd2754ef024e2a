//! The configuration's loading, layering and validation.

use super::*;

fn load(text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, text).unwrap();
    Config::load(Some(&path), env.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())), &Overrides::default())
}

#[test]
fn the_embedded_default_is_valid() {
    let c = Config::load(None, [], &Overrides::default()).unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(c.datasets["sample"].url, "data/sample.zarr");
    // Remote reads wait 2 ms for concurrent ones to join them; local files are read at once.
    let windows = c.storage.windows();
    assert_eq!((windows.remote, windows.local), (Duration::from_millis(2), Duration::ZERO));
}

#[test]
fn the_sample_is_served_only_while_no_other_dataset_is_configured() {
    let names = |c: &Config| c.datasets.keys().cloned().collect::<Vec<_>>();
    // Nothing configured: the embedded default's sample.
    assert_eq!(names(&Config::load(None, [], &Overrides::default()).unwrap()), ["sample"]);
    // `--dataset` replaces it.
    let flag = Overrides { datasets: vec!["era5=/data/era5.zarr".into()], ..Overrides::default() };
    assert_eq!(names(&Config::load(None, [], &flag).unwrap()), ["era5"]);
    // So does a dataset from the environment.
    let env = [("ZARRD__DATASETS__ERA5__URL".to_owned(), "/data/era5.zarr".to_owned())];
    assert_eq!(names(&Config::load(None, env, &Overrides::default()).unwrap()), ["era5"]);
    // A copy of the embedded default with a dataset of its own added serves that one only.
    let copy = format!("{DEFAULT_CONFIG}\n[datasets.era5]\nurl = \"/data/era5.zarr\"\n");
    assert_eq!(names(&load(&copy, &[]).unwrap()), ["era5"]);
    assert_eq!(names(&load(DEFAULT_CONFIG, &[]).unwrap()), ["sample"], "an unedited copy serves the sample");
    // Named explicitly, the sample is served beside the others: by the environment, where a
    // variable of its own makes it configured, not a fallback.
    let env = [
        ("ZARRD__DATASETS__ERA5__URL".to_owned(), "/data/era5.zarr".to_owned()),
        ("ZARRD__DATASETS__SAMPLE__URL".to_owned(), "/srv/sample.zarr".to_owned()),
    ];
    assert_eq!(names(&Config::load(None, env, &Overrides::default()).unwrap()), ["era5", "sample"]);
    let env = [
        ("ZARRD__DATASETS__ERA5__URL".to_owned(), "/data/era5.zarr".to_owned()),
        ("ZARRD__DATASETS__SAMPLE__FALLBACK".to_owned(), "true".to_owned()),
    ];
    assert_eq!(names(&Config::load(None, env, &Overrides::default()).unwrap()), ["era5"]);
    // And by flags.
    let both = Overrides {
        datasets: vec!["era5=/data/era5.zarr".into(), "sample=data/sample.zarr".into()],
        ..Overrides::default()
    };
    assert_eq!(names(&Config::load(None, [], &both).unwrap()), ["era5", "sample"]);
}

#[test]
fn dataset_options_from_the_environment_may_be_booleans_or_numbers() {
    let c = load(
        "listen = \"127.0.0.1:0\"\n",
        &[
            ("ZARRD__DATASETS__B__URL", "http://127.0.0.1:9/x.zarr"),
            ("ZARRD__DATASETS__B__OPTIONS__ALLOW_HTTP", "true"),
            ("ZARRD__DATASETS__B__OPTIONS__POOL_MAX_IDLE_PER_HOST", "8"),
        ],
    )
    .unwrap();
    let options = &c.datasets["b"].options;
    assert_eq!((options["allow_http"].as_str(), options["pool_max_idle_per_host"].as_str()), ("true", "8"));
    let err =
        load("listen = \"127.0.0.1:0\"\n[datasets.b]\nurl = \"x\"\noptions = { region = [1] }\n", &[]).unwrap_err();
    assert!(err.to_string().contains("region"), "{err}");
}

#[test]
fn env_and_flags_override_the_file() {
    let c = load(
        "listen = \"127.0.0.1:1\"\n[datasets.a]\nurl = \"/tmp\"\n",
        &[("ZARRD__LIMITS__MAX_IN_FLIGHT", "7"), ("ZARRD__HTTP__CACHE_CONTROL", "no-cache"), ("OTHER", "x")],
    )
    .unwrap();
    assert_eq!(c.limits.max_in_flight, 7);
    assert_eq!(c.http.cache_control, "no-cache");
    let o = Overrides {
        listen: Some("0.0.0.0:9".parse().unwrap()),
        datasets: vec!["b=s3://bucket/x".into()],
        log_format: Some("json".into()),
    };
    let c = Config::load(None, [], &o).unwrap();
    assert_eq!((c.listen.port(), c.datasets["b"].url.as_str(), c.log.format.as_str()), (9, "s3://bucket/x", "json"));
}

#[test]
fn bad_configs_name_the_field() {
    let cases = [
        ("listen = \"127.0.0.1:1\"\nbogus = 1\n[datasets.a]\nurl = \"/tmp\"\n", "bogus"),
        ("listen = \"nope\"\n[datasets.a]\nurl = \"/tmp\"\n", "listen"),
        (
            "listen = \"127.0.0.1:1\"\n[limits]\nmax_response_bytes = 0\n[datasets.a]\nurl = \"/tmp\"\n",
            "limits.max_response_bytes",
        ),
        (
            "listen = \"127.0.0.1:1\"\n[http]\nheader_read_timeout_secs = 0\n[datasets.a]\nurl = \"/tmp\"\n",
            "http.header_read_timeout_secs",
        ),
        (
            "listen = \"127.0.0.1:1\"\n[http]\nmax_connections = 0\n[datasets.a]\nurl = \"/tmp\"\n",
            "http.max_connections",
        ),
        ("listen = \"127.0.0.1:1\"\n[log]\nformat = \"xml\"\n[datasets.a]\nurl = \"/tmp\"\n", "log.format"),
        ("listen = \"127.0.0.1:1\"\n[compat]\nchunk_bytes = 0\n[datasets.a]\nurl = \"/tmp\"\n", "compat.chunk_bytes"),
        (
            "listen = \"127.0.0.1:1\"\n[compat]\nchunk_bytes = 2147483648\n[datasets.a]\nurl = \"/tmp\"\n",
            "compat.chunk_bytes",
        ),
        ("listen = \"127.0.0.1:1\"\n[compat]\nchunk = 1\n[datasets.a]\nurl = \"/tmp\"\n", "chunk"),
        (
            "listen = \"127.0.0.1:1\"\n[storage]\ncoalesce_window_ms = 1001\n[datasets.a]\nurl = \"/tmp\"\n",
            "storage.coalesce_window_ms",
        ),
        (
            "listen = \"127.0.0.1:1\"\n[storage]\nlocal_coalesce_window_ms = 60000\n[datasets.a]\nurl = \"/tmp\"\n",
            "storage.local_coalesce_window_ms",
        ),
        ("listen = \"127.0.0.1:1\"\n", "datasets"),
        ("listen = \"127.0.0.1:1\"\n[datasets.\"a b\"]\nurl = \"/tmp\"\n", "datasets.a b"),
        ("listen = \"127.0.0.1:1\"\n[datasets.a]\nurl = \"/tmp\"\nsecret = 1\n", "secret"),
    ];
    for (text, field) in cases {
        let err = load(text, &[]).unwrap_err().to_string();
        assert!(err.contains(field), "{err} should name {field}");
    }
    assert!(Config::load(None, [], &Overrides { datasets: vec!["nourl".into()], ..Overrides::default() }).is_err());
}

#[test]
fn the_connection_cap_leaves_file_descriptors_free() {
    assert_eq!(default_max_connections(1024), 768);
    assert_eq!(default_max_connections(1_048_576), 1_048_320);
    assert_eq!(default_max_connections(64), 32);
    assert_eq!(default_max_connections(1), 1);
    let c = Config::load(None, [], &Overrides::default()).unwrap();
    assert_eq!((c.http.header_read_timeout_secs, c.http.keep_alive_secs, c.http.shutdown_timeout_secs), (10, 75, 20));
    assert_eq!(c.http.max_connections, None);
    assert_eq!(c.compat, CompatConfig { min_chunk_bytes: 256 * 1024, chunk_bytes: 1024 * 1024 });
}
