import { InputError } from "../../http/validation";
import { ApiRefusedInput } from "../../net/fetcher";

/**
 * `search()`, with a search the API refused as the caller wrote it (ApiRefusedInput: an empty
 * one, a regex CirrusSearch cannot read) turned into a 422 `search_refused` on the field the text
 * came from: the caller's input, not charged and not our upstream's failure.
 */
export async function searchOrRefuse<T>(
  search: () => Promise<T>,
  field: "query" | "seed_entity",
  refusal: string,
  input: string,
): Promise<T> {
  try {
    return await search();
  } catch (e) {
    if (!(e instanceof ApiRefusedInput)) throw e;
    throw InputError.at([field], `${refusal}: ${e.info}`, input, "search_refused", {
      reason: e.info,
      code: e.code,
    });
  }
}
