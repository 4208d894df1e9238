"""The code-repair env: small packages with injected bugs (tasks.py, bugs.py) and the sandbox that runs them."""
