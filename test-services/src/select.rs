//! The selection rule as a pure function of the environment and a probe.

/// A service the tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// PostgreSQL (the stores, chaos mode).
    Postgres,
    /// Redis (the seat-map cache, the waiting rooms).
    Redis,
}

impl Service {
    /// The environment variable that names its server.
    pub fn env_var(self) -> &'static str {
        match self {
            Service::Postgres => "HOLDFAST_TEST_DATABASE_URL",
            Service::Redis => "HOLDFAST_TEST_REDIS_URL",
        }
    }

    /// The URL schemes accepted for it.
    pub fn schemes(self) -> &'static [&'static str] {
        match self {
            Service::Postgres => &["postgres://", "postgresql://"],
            Service::Redis => &["redis://", "rediss://"],
        }
    }

    /// The local server `ci/test` starts.
    pub fn default_url(self) -> &'static str {
        match self {
            Service::Postgres => "postgres://postgres@127.0.0.1:5432/postgres",
            Service::Redis => "redis://127.0.0.1:6379",
        }
    }

    /// The container image and tag started for it.
    pub fn image(self) -> (&'static str, &'static str) {
        match self {
            Service::Postgres => ("postgres", "15-alpine"),
            Service::Redis => ("redis", "7-alpine"),
        }
    }
}

/// What the machine offers besides the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// This build has the feature `containers`.
    pub containers_compiled: bool,
    /// A Docker engine answers.
    pub docker_reachable: bool,
}

/// Where a service comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Its URL was given in `var`.
    Given {
        /// The environment variable.
        var: &'static str,
        /// Its value.
        url: String,
    },
    /// A container is to be started from `image:tag`.
    Container {
        /// The image.
        image: &'static str,
        /// The tag.
        tag: &'static str,
    },
    /// The local default server.
    Default {
        /// Its URL.
        url: String,
    },
}

/// A given URL the tests cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The variable is set to something that is not a URL of the service.
    #[error("{var}={url:?} is not a URL of this service (expected one starting with {expected})")]
    WrongScheme {
        /// The environment variable.
        var: &'static str,
        /// Its value.
        url: String,
        /// The accepted schemes, joined.
        expected: String,
    },
}

/// The rule: a given URL wins, then a container where the feature is built
/// and Docker answers, then the local default. A variable set to the empty
/// string counts as unset (as shells and CI systems often leave them).
pub fn select(service: Service, env: impl Fn(&str) -> Option<String>, probe: Probe) -> Result<Source, SelectError> {
    let var = service.env_var();
    if let Some(url) = env(var).map(|u| u.trim().to_string()).filter(|u| !u.is_empty()) {
        if !service.schemes().iter().any(|s| url.starts_with(s)) {
            return Err(SelectError::WrongScheme { var, url, expected: service.schemes().join(" or ") });
        }
        return Ok(Source::Given { var, url });
    }
    if probe.containers_compiled && probe.docker_reachable {
        let (image, tag) = service.image();
        return Ok(Source::Container { image, tag });
    }
    Ok(Source::Default { url: service.default_url().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: fn(&str) -> Option<String> = |_| None;
    const ALL: [Probe; 4] = [
        Probe { containers_compiled: false, docker_reachable: false },
        Probe { containers_compiled: false, docker_reachable: true },
        Probe { containers_compiled: true, docker_reachable: false },
        Probe { containers_compiled: true, docker_reachable: true },
    ];

    fn given(var: &'static str, url: &'static str) -> impl Fn(&str) -> Option<String> {
        move |v| (v == var).then(|| url.to_string())
    }

    #[test]
    fn a_given_url_wins_whatever_docker_offers() {
        for probe in ALL {
            let pg = select(Service::Postgres, given("HOLDFAST_TEST_DATABASE_URL", "postgres://u@db:5/x"), probe);
            assert_eq!(pg, Ok(Source::Given { var: "HOLDFAST_TEST_DATABASE_URL", url: "postgres://u@db:5/x".into() }));
            let r = select(Service::Redis, given("HOLDFAST_TEST_REDIS_URL", " redis://cache:7 "), probe);
            assert_eq!(r, Ok(Source::Given { var: "HOLDFAST_TEST_REDIS_URL", url: "redis://cache:7".into() }));
        }
    }

    #[test]
    fn each_service_reads_only_its_own_variable() {
        let only_redis = given("HOLDFAST_TEST_REDIS_URL", "redis://cache:7");
        let probe = Probe { containers_compiled: false, docker_reachable: false };
        assert_eq!(
            select(Service::Postgres, only_redis, probe),
            Ok(Source::Default { url: "postgres://postgres@127.0.0.1:5432/postgres".into() })
        );
    }

    #[test]
    fn a_container_needs_both_the_feature_and_a_docker_engine() {
        for probe in ALL {
            let pg = select(Service::Postgres, NONE, probe).unwrap();
            let redis = select(Service::Redis, NONE, probe).unwrap();
            if probe.containers_compiled && probe.docker_reachable {
                assert_eq!(pg, Source::Container { image: "postgres", tag: "15-alpine" });
                assert_eq!(redis, Source::Container { image: "redis", tag: "7-alpine" });
            } else {
                assert_eq!(pg, Source::Default { url: Service::Postgres.default_url().into() });
                assert_eq!(redis, Source::Default { url: Service::Redis.default_url().into() });
            }
        }
    }

    #[test]
    fn an_empty_variable_counts_as_unset() {
        let probe = Probe { containers_compiled: true, docker_reachable: true };
        let empty = given("HOLDFAST_TEST_DATABASE_URL", "  ");
        assert_eq!(
            select(Service::Postgres, empty, probe),
            Ok(Source::Container { image: "postgres", tag: "15-alpine" })
        );
    }

    #[test]
    fn a_url_of_the_wrong_service_is_a_named_error() {
        let probe = Probe { containers_compiled: true, docker_reachable: true };
        let swapped = given("HOLDFAST_TEST_DATABASE_URL", "redis://127.0.0.1:6379");
        match select(Service::Postgres, swapped, probe) {
            Err(SelectError::WrongScheme { var, url, .. }) => {
                assert_eq!(var, "HOLDFAST_TEST_DATABASE_URL");
                assert_eq!(url, "redis://127.0.0.1:6379");
            }
            other => panic!("expected WrongScheme, got {other:?}"),
        }
        let pg_for_redis = given("HOLDFAST_TEST_REDIS_URL", "postgresql://x/y");
        assert!(matches!(select(Service::Redis, pg_for_redis, probe), Err(SelectError::WrongScheme { .. })));
    }
}
