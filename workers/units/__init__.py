"""The units daemon: unit reports (claims) become transitions, or refusal findings."""
