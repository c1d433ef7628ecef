"""TLA+ models of the protocols and ``manifest.json`` (which models, configs and expected figures),
shipped as package data so that ``rmkit tlc`` finds them in an installed kit."""
