"""Everything that decides: the plugin framework, the plugins, the engines, the verifier, the CLI."""

KUBE_SCHEDULER = "v1.36.3"  # the kube-scheduler release the greedy engine reproduces (checked against oracle/)

from . import plugins as _plugins  # noqa: E402, F401  (registers the in-tree plugins with the framework)
