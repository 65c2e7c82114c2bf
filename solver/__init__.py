"""Everything that decides: the plugin framework, the plugins, the engines, the verifier, the CLI."""
