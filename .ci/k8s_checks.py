"""What kubernetes-validate's schemas cannot check in deploy/kubernetes (see .ci/k8s-validate.sh)."""

import pathlib
import sys
import tomllib

import yaml

root = pathlib.Path(sys.argv[1])
failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def load(name):
    return yaml.safe_load((root / name).read_text())


config_map = load("configmap.yaml")
config = tomllib.loads(config_map["data"]["config.toml"])
deployment = load("deployment.yaml")
pod = deployment["spec"]["template"]["spec"]
(container,) = pod["containers"]

drain = config["http"]["drain_secs"]
shutdown = config["http"]["shutdown_timeout_secs"]
grace = pod["terminationGracePeriodSeconds"]
check(drain + shutdown < grace, f"drain_secs {drain} + shutdown_timeout_secs {shutdown} < terminationGracePeriodSeconds {grace}")
readiness = container["readinessProbe"]
check(readiness["httpGet"]["path"] == "/readyz", "readiness probe on /readyz")
check(container["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness probe on /healthz")
# The replica must be out of the endpoints (one readiness period) well before the listener closes.
check(readiness["periodSeconds"] * readiness["failureThreshold"] < drain, "readiness fails within drain_secs")
check(pod["securityContext"]["runAsNonRoot"] and container["securityContext"]["runAsNonRoot"], "runs as non-root")
check(container["securityContext"]["readOnlyRootFilesystem"], "read-only root filesystem")
check(container["securityContext"]["capabilities"]["drop"] == ["ALL"], "drops all capabilities")
check(container["securityContext"]["allowPrivilegeEscalation"] is False, "no privilege escalation")
check("limits" in container["resources"] and "requests" in container["resources"], "resources set")
check(bool(pod.get("topologySpreadConstraints")), "spread across nodes")
mounts = {m["mountPath"] for m in container["volumeMounts"]}
env = {e["name"]: e.get("value") for e in container["env"]}
check(pathlib.PurePath(env["ZARRD_CONFIG"]).parent.as_posix() in mounts, "ZARRD_CONFIG is inside the ConfigMap mount")
check(any(s.get("secretRef", {}).get("name") == "zarrd-credentials" for s in container.get("envFrom", [])), "credentials from the Secret")
check(any(s.get("secretRef", {}).get("name") == "zarrd-auth" for s in container.get("envFrom", [])), "signing key and API keys from the Secret")
check(config["listen"].endswith(":8080") and env["ZARRD_LISTEN"].endswith(":8080"), "listens on the container port")
annotations = deployment["spec"]["template"]["metadata"]["annotations"]
check(annotations.get("prometheus.io/path") == "/metrics", "Prometheus scrape annotations")

# No credential in the ConfigMap, in any dataset's options or anywhere else.
text = config_map["data"]["config.toml"].lower()
active = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
check(not any(w in active for w in ("secret", "access_key", "password", "token", "account_key")), "no credential in the ConfigMap")
secret = load("secret.example.yaml")
check(secret["kind"] == "Secret" and secret["metadata"]["name"] == "zarrd-credentials", "Secret example named as the Deployment expects")
# API keys and the signing key are never in the ConfigMap either.
check(not any(w in active for w in ("api_keys", "sha256", "zarrd_signing_key")), "no API key or signing key in the ConfigMap")
auth_secret = load("secret-auth.example.yaml")
check(auth_secret["kind"] == "Secret" and auth_secret["metadata"]["name"] == "zarrd-auth", "auth Secret example named as the Deployment expects")
check({"ZARRD_SIGNING_KEY", "ZARRD__AUTH__API_KEYS"} <= set(auth_secret["stringData"]), "auth Secret example holds the signing key and the API keys")

kustomization = load("kustomization.yaml")
for resource in kustomization["resources"]:
    check((root / resource).is_file(), f"kustomization resource {resource} exists")
check("secret.example.yaml" not in kustomization["resources"], "the Secret example is not applied by kustomize")
check("secret-auth.example.yaml" not in kustomization["resources"], "the auth Secret example is not applied by kustomize")

hpa = load("hpa.yaml")
check(hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"], "HPA targets the Deployment")
check(hpa["spec"]["minReplicas"] >= 2, "HPA keeps at least 2 replicas")
pdb = load("pdb.yaml")
labels = deployment["spec"]["selector"]["matchLabels"]
check(pdb["spec"]["selector"]["matchLabels"] == labels, "PDB selects the Deployment's pods")
service = load("service.yaml")
check(service["spec"]["selector"] == labels, "Service selects the Deployment's pods")

monitor = load("extras/servicemonitor.yaml")
check(monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "ServiceMonitor", "ServiceMonitor kind")
check(monitor["spec"]["selector"]["matchLabels"] == service["metadata"]["labels"], "ServiceMonitor selects the Service")
check(monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"], "ServiceMonitor scrapes the named port")
ingress = load("extras/ingress-nginx.yaml")
check(ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/upstream-hash-by"] == "$request_uri", "ingress hashes on the full URI")

if failures:
    sys.exit(f"k8s checks: {len(failures)} failed")
print("k8s checks: all passed")
