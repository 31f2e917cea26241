"""Configuration, the first step: retention.yaml, the environment, the API key, the policy files."""
