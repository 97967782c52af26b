"""The verifier: code-cold verification of each merged wave (docs/verify.md)."""
