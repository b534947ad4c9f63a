import type { Child } from "hono/jsx";
import { TableBox } from "./scroll-box";

/** A table's header row: one column heading per name; `null` leaves an optional column out. */
export function ColumnHeads(props: { columns: (string | null)[] }) {
  return (
    <thead>
      <tr>{props.columns.map((c) => (c === null ? null : <th scope="col">{c}</th>))}</tr>
    </thead>
  );
}

/**
 * A dashboard table: column headings, then one row per entry, each headed by its first cell. It
 * scrolls inside its own box: a row of hashes is far wider than a phone.
 */
export function RowHeadedTable(props: {
  id: string;
  /** What the table lists, said when its scrolling box has the focus. */
  label: string;
  columns: string[];
  rows: [Child, ...Child[]][];
}) {
  return (
    <TableBox label={props.label}>
      <table class="admin-table" id={props.id}>
        <ColumnHeads columns={props.columns} />
        <tbody>
          {props.rows.map(([head, ...cells]) => (
            <tr>
              <th scope="row">{head}</th>
              {cells.map((c) => (
                <td>{c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableBox>
  );
}
