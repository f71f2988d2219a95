/** One grounded generate call of the client tests: the fixtures' grounded query and scope, a scripted model. */
import type { NeuroLink } from "../../../src/neurolink/index.js";
import { GROUNDED_QUERY, SCOPE } from "./fixtures.js";
import { answeringModel } from "./models.js";

/** Runs one grounded `generate` on `neurolink`; returns the result and the model (its calls recorded). */
export async function groundedTurn(neurolink: NeuroLink) {
  const model = answeringModel("answer");
  const result = await neurolink.generate({
    input: { text: GROUNDED_QUERY },
    model,
    useKnowledgeGrounding: true,
    knowledgeContext: SCOPE,
  });
  return { result, model };
}
