"""The recipe's Wordle environment: G/Y/X feedback, the reward, prompts and the six-turn agent loop."""

from exercises.lab.wordle.agent_loop import AgentLoopOutput, WordleAgentLoop, build_response
from exercises.lab.wordle.feedback import env_message, feedback, has_canonical_format, parse_guess
from exercises.lab.wordle.reward import compute_score

__all__ = [
    "AgentLoopOutput",
    "WordleAgentLoop",
    "build_response",
    "compute_score",
    "env_message",
    "feedback",
    "has_canonical_format",
    "parse_guess",
]
