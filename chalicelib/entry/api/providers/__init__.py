"""The provider functions' entry modules: ``registry`` (the private provider registry's API)
and ``mirror`` (the provider network mirror). Empty on purpose: importing one entry must not
load the other's routes."""
