"""The deliberation protocol: roles, rounds, consensus and the safety gate. Pure Python: it
knows nothing about Django; services wire it to the database, the LLM and the broadcasts."""
