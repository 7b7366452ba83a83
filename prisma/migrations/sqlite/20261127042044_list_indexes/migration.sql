-- DropIndex
DROP INDEX "File_projectId_createdAt_idx";

-- CreateIndex
CREATE INDEX "File_projectId_id_idx" ON "File"("projectId", "id");

-- CreateIndex
CREATE INDEX "Secret_projectId_createdAt_id_idx" ON "Secret"("projectId", "createdAt", "id");
