"""An offline, deterministic simulated provider (it says "simulated" in its model names).

``brain.reply`` turns a request (its purpose, the messages and the wanted JSON schema) into reply
text; the in-process model (``model.SimulatedModel``) and the OpenAI-compatible HTTP server
(``server``, ``python -m verify.llm.simulated serve --port N``, which learns the purpose from the
``X-Verify-Purpose`` header) both use it.
"""
