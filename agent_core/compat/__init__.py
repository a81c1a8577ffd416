"""Other APIs' spellings over Stepwise's runtime, as leaves that import only its public API."""
