"""What benchmarks and tests share: the fake OpenAI-compatible server, real Parley processes,
small worlds and setups, stored worlds, subscribers and people in the loop."""
