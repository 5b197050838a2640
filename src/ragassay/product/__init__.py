"""What people look at around the stages: reports, tracked history and gates, the demo."""
