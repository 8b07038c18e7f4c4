"""Observer plugins: loggers of training curves and results, registered through the entry point group
``benchbackcompat.observers`` (see :meth:`benchbackcompat.execution.plugin_host.PluginHost.load_observers`)."""
