"""The projector daemon: materialises every projection into the projections KV bucket."""
