"""A metric of one's own: whether the response answers the question it was asked.

    localeval run examples/samples.jsonl --metrics-from examples/answers_directly.py \
        --metrics answers_directly,context_recall

`localeval docs custom-metrics` explains each part."""

import localeval
from localeval.metrics import JudgeRequest, Metric, MetricResult, judge_failure, max_output_tokens

SYSTEM = ("You check answers to questions. Read the question and the response. Say in a short reason "
          "whether the response answers the question itself, then give direct: 1 if it does, 0 if it "
          "talks around it, answers another question, or declines.")


@localeval.register_metric
class AnswersDirectly(Metric):
    name = "answers_directly"
    description = "whether the response answers the question it was asked (1) or not (0)"
    low_means = "the answer (it talks around the question)"
    requires = ("user_input", "response")

    def steps(self, sample, language):
        schema = {"type": "object", "additionalProperties": False, "required": ["reason", "direct"],
                  "properties": {"reason": {"type": "string", "maxLength": self.settings.reason_chars},
                                 "direct": {"enum": [0, 1]}}}
        user = f"Question: {sample.user_input}\n\nResponse: {sample.response}"
        (answer,) = yield [JudgeRequest.build(SYSTEM, user, schema, max_output_tokens(schema))]
        if answer.data is None:  # cut off, refused, or too long for the judge: null, with the reason
            return judge_failure(answer)
        probability = answer.probabilities("direct")  # the judge's probability of 1; None from a scripted judge
        evidence = {"reason": answer.data["reason"], "probability": probability[0] if probability else None}
        return MetricResult(float(answer.data["direct"]), evidence)


if __name__ == "__main__":  # `python examples/answers_directly.py`: the same scores from Python
    result = localeval.evaluate("examples/samples.jsonl", metrics=["answers_directly", "context_recall"])
    print(result.summary()["answers_directly"])
