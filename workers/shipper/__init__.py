"""The shipper daemon: secrets in trunk's history, and closed slices as PR bundles."""
