"""The RGB robustness suite: answer matching, rejection and error detection."""
