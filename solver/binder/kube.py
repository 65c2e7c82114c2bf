"""The Kubernetes API through the official `kubernetes` client: kubeconfig, paginated raw lists, Status errors.

Responses are read raw (`_preload_content=False`) and parsed as JSON, so objects stay in wire format
(camelCase dicts): exactly what `models.io` reads and what `kubectl get -o json` writes, without the
client's slow conversion into its own model classes and back. The client is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kplace.models.errors import KplaceError

PAGE_SIZE = 500  # kubectl's default chunk size

# kind → (API class, list method for all namespaces, apiVersion of the items)
LIST_KINDS: dict[str, tuple[str, str, str]] = {
    "Node": ("CoreV1Api", "list_node", "v1"),
    "Pod": ("CoreV1Api", "list_pod_for_all_namespaces", "v1"),
    "PodDisruptionBudget": ("PolicyV1Api", "list_pod_disruption_budget_for_all_namespaces", "policy/v1"),
    "PriorityClass": ("SchedulingV1Api", "list_priority_class", "scheduling.k8s.io/v1"),
    "Namespace": ("CoreV1Api", "list_namespace", "v1"),
    "PersistentVolume": ("CoreV1Api", "list_persistent_volume", "v1"),
    "PersistentVolumeClaim": ("CoreV1Api", "list_persistent_volume_claim_for_all_namespaces", "v1"),
    "StorageClass": ("StorageV1Api", "list_storage_class", "storage.k8s.io/v1"),
    "CSINode": ("StorageV1Api", "list_csi_node", "storage.k8s.io/v1"),
    "Service": ("CoreV1Api", "list_service_for_all_namespaces", "v1"),
    "ReplicaSet": ("AppsV1Api", "list_replica_set_for_all_namespaces", "apps/v1"),
    "StatefulSet": ("AppsV1Api", "list_stateful_set_for_all_namespaces", "apps/v1"),
}


class KubeError(KplaceError):
    """The API could not be reached or refused a read kplace needs."""


@dataclass
class ApiFailure:
    """One failed API call, classified: `code` is the HTTP status (0 for a timeout or a broken connection)."""

    code: int
    reason: str
    message: str
    retry_after: float | None = None
    causes: list[dict[str, Any]] | None = None

    @property
    def transient(self) -> bool:
        """429, 5xx and timeouts are worth retrying; everything else is the answer."""
        return self.code == 0 or self.code == 429 or self.code >= 500

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "reason": self.reason, "message": self.message}


def new_client(kubeconfig: str | None, context: str | None = None, *, pool: int = 16):
    """An ApiClient for the kubeconfig (and context), or the pod's service account when `kubeconfig` is None
    (in-cluster). urllib3's own retries are off: kplace retries itself."""
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=cfg)
        else:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg,
                                    persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError, yaml.YAMLError) as exc:
        where = kubeconfig or "in-cluster service account"
        raise KubeError(f"{where}: cannot load the Kubernetes client configuration: {exc}") from None
    cfg.retries = False
    cfg.connection_pool_maxsize = max(pool, 4)
    return client.ApiClient(configuration=cfg)


def api(client, name: str):
    """The typed API group object (`CoreV1Api`, `PolicyV1Api`, ...) over `client`."""
    from kubernetes import client as k

    return getattr(k, name)(client)


def failure(exc: BaseException) -> ApiFailure:
    """Classify an exception from the client: an HTTP error with its Status body, or a transport failure."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        status: dict[str, Any] = {}
        try:
            status = json.loads(exc.body) if exc.body else {}
        except (ValueError, TypeError):
            status = {}
        if not isinstance(status, dict):
            status = {}
        retry = None
        headers = exc.headers or {}
        raw = headers.get("Retry-After") if hasattr(headers, "get") else None
        if raw:
            try:
                retry = float(raw)
            except ValueError:
                retry = None
        details = status.get("details") if isinstance(status.get("details"), dict) else {}
        return ApiFailure(
            code=int(exc.status or 0),
            reason=str(status.get("reason") or exc.reason or ""),
            message=str(status.get("message") or exc.reason or f"HTTP {exc.status}"),
            retry_after=retry,
            causes=details.get("causes") or None,
        )
    return ApiFailure(code=0, reason="Timeout" if "timeout" in type(exc).__name__.lower() or
                      "timed out" in str(exc).lower() else "ConnectionError", message=str(exc) or type(exc).__name__)


def request_timeout(seconds: float) -> tuple[float, float]:
    """(connect, read) seconds for the client's `_request_timeout`, which silently ignores a float: a read timeout
    bounds every wait for the server, so a server that accepts and never answers fails the call in `seconds`."""
    return (min(float(seconds), CONNECT_TIMEOUT), float(seconds))


def transport_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the call failed (HTTP status, timeout, broken connection)."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    return (ApiException, urllib3.exceptions.HTTPError, OSError)


def raw_json(resp) -> Any:
    """Read and parse a `_preload_content=False` response, then give its connection back to the pool."""
    try:
        return json.loads(resp.data)
    finally:
        resp.release_conn()


CONNECT_TIMEOUT = 10.0


@dataclass
class Timeouts:
    """Seconds each API call may take: `call` for one object (bind, evict, get), `list` for a page of a list.
    `kplace ... --request-timeout` sets both, as kubectl's flag does."""

    call: float = 10.0
    list: float = 60.0


TIMEOUTS = Timeouts()


class ContinueExpired(KubeError):
    """A continue token outlived its resourceVersion (HTTP 410): the list must start again."""


def list_pages(client, kind: str, *, page_size: int = PAGE_SIZE, timeout: float | None = None
               ) -> Iterator[tuple[list[dict[str, Any]], str]]:
    """Pages of (items, resourceVersion) of one kind over all namespaces, with `limit` and `continue`.

    Items come as the API sends them (without `kind`/`apiVersion`); `kind` and `apiVersion` are set on
    each, as kubectl does. A continue token that expired raises ContinueExpired (`list_all` starts over).
    `page_size` 0 reads everything in one call.
    """
    from kubernetes.client.exceptions import ApiException

    cls, method, api_version = LIST_KINDS[kind]
    fn = getattr(api(client, cls), method)
    what = f"listing {kind}{'es' if kind.endswith('s') else 's'}"  # PriorityClasses, not PriorityClasss
    timeout = TIMEOUTS.list if timeout is None else timeout
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": request_timeout(timeout)}
        if page_size:
            kwargs["limit"] = page_size
        if token:
            kwargs["_continue"] = token
        try:
            body = raw_json(fn(**kwargs))
        except ApiException as exc:
            f = failure(exc)
            if exc.status == 410 and token:
                raise ContinueExpired(f"{what}: {f.message}") from None
            raise KubeError(f"{what}: HTTP {f.code} {f.reason}: {f.message}") from None
        except transport_errors() as exc:
            raise KubeError(f"{what}: {failure(exc).message}") from None
        items = body.get("items") or []
        for item in items:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
        meta = body.get("metadata") or {}
        yield items, str(meta.get("resourceVersion") or "")
        token = meta.get("continue") or None
        if not token:
            return


def list_all(client, kind: str, *, page_size: int = PAGE_SIZE, timeout: float | None = None
             ) -> tuple[list[dict[str, Any]], str]:
    """Every object of one kind (all pages) and the resourceVersion of the list.

    When a continue token expires mid-list the pages read so far are dropped and the list starts over, and
    after two such failures it is read in one call without `limit`, as client-go's pager falls back to.
    """
    for attempt in range(3):
        out: list[dict[str, Any]] = []
        rv = ""
        try:
            for items, page_rv in list_pages(client, kind, page_size=page_size if attempt < 2 else 0,
                                             timeout=timeout):
                out.extend(items)
                rv = rv or page_rv  # every page of a list is read at the first page's resourceVersion
            return out, rv
        except ContinueExpired:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
