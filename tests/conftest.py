import pytest


@pytest.fixture(scope="session")
def model_session():
    """The default local model (Qwen2.5-Coder-0.5B), loaded once for the model tests."""
    from prism_code.llm import LlamaSession

    session = LlamaSession.open("qwen2.5-coder-0.5b", n_ctx=4096)
    yield session
    session.close()
